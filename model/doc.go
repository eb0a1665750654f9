// Package model runs a trained model for inference, without actors: Load
// rebuilds it from a checkpoint, which describes its layers, input shape,
// classes and input preprocessing (Description), and Predict and Classify
// serve many goroutines at once.
//
//	m, err := model.Load("checkpoints")          // the newest checkpoint there
//	x, err := m.Prepare(raw)                      // raw values as the data set held them
//	probs, err := m.Predict(x)                    // [N, classes]
//	classes, err := m.Classify(x)
//
// Each call runs on its caller's goroutine over a copy of the layers that
// later calls reuse, so a warm Model allocates only its result.
package model
