package dataset_test

import (
	"fmt"
	"log"

	"github.com/pipetrain/pipetrain/dataset"
)

func ExampleDigits() {
	set, err := dataset.Digits()
	if err != nil {
		log.Fatal(err)
	}
	train, test, err := dataset.Split(set, 0.2, 1)
	if err != nil {
		log.Fatal(err)
	}
	train, test = dataset.Standardize(train, test)
	fmt.Println(set.Len(), "rows of", set.Features, "features,", len(set.Classes), "classes")
	fmt.Println(train.Len(), "train rows,", test.Len(), "test rows")

	loader := dataset.NewLoader(train, 64, true, 1)
	x, labels, _ := loader.Batch(0, 0)
	fmt.Println(loader.BatchesPerEpoch(), "batches per epoch; batch 0 is", x.Shape(), "with", len(labels), "labels")
	last, _, _ := loader.Batch(0, loader.BatchesPerEpoch()-1)
	fmt.Println("the last batch is", last.Shape())
	// Output:
	// 1797 rows of 64 features, 10 classes
	// 1438 train rows, 359 test rows
	// 23 batches per epoch; batch 0 is [64 64] with 64 labels
	// the last batch is [30 64]
}

func ExampleSpirals() {
	set := dataset.Spirals(100, 3, 0.2, 1)
	train, test, err := dataset.Split(set, 0.2, 1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(set.X.Shape(), set.Classes)
	fmt.Println(train.Len(), test.Len())
	// Output:
	// [300 2] [0 1 2]
	// 240 60
}
