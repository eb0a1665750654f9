// Package model runs a trained model for inference, without actors: Load
// rebuilds it from a checkpoint, which describes its layers, input shape,
// classes and input preprocessing (Description), and Predict and Classify
// serve many goroutines at once.
//
//	m, err := model.Load("checkpoints")          // the newest checkpoint there
//	x, err := m.Prepare(raw)                      // raw values as the data set held them
//	probs, err := m.Predict(x)                    // [N, classes]
//	classes, err := m.Classify(x)
//	loss, acc, err := m.Evaluate(x, nn.Target{Labels: labels}, 1024)
//
// A description also records the data set the model was trained on
// (Description.Data: the run's seed and its [data] keys), from which
// `train eval` loads the same test split again; Evaluate then reproduces
// the loss and accuracy the run logged, bit for bit, by the same chunked
// arithmetic.
//
// Each call of Predict, Outputs or Classify runs on its caller's goroutine
// over a copy of the layers that later calls reuse, so a warm Model
// allocates only its result; Evaluate, a batch job, lets its kernels use
// every core.
package model
