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
//	err = m.ExportONNX(w)                         // the same model as an ONNX graph
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
//
// FromHF and ToHF (Model.HF) carry a GPT's weights to and from Hugging
// Face's GPT-2 layout: its keys, Conv1D weights [in, out] transposed into
// Linear's [out, in], a tied lm_head left out as save_pretrained leaves it,
// no head bias (GPT-2 has none), and config.json's fields. The mapping is
// checked against nanoGPT's GPT in PyTorch (testdata/hf).
//
// ExportONNX writes ONNX opset 13 (ONNXOpset), the graph's output equal to
// Predict's: a layer becomes the ONNX operator of the same meaning (linear
// Gemm, conv2d Conv, batchnorm BatchNormalization with the running
// statistics, ...), dropout no node at all, and GELU and layer norm the
// elementary operators they are made of, since their own operators came
// only in opsets 20 and 17 and an older opset reaches more runtimes. The
// Predict head, softmax or sigmoid, ends the graph. The types of the format
// come from ONNX's onnx.proto, generated into internal/onnx.
package model
