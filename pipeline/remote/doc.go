// Package remote is what crosses processes in a pipeline: the worker that
// hosts stage actors for a coordinator elsewhere (NewWorker, `train
// worker`), an engine's side of its workers (Hosts), the link between them
// (protoactor's remote over gRPC, with a token, TLS and a handshake that
// checks the Protocol), the data plane that carries tensors, and the
// account of messages that were not delivered. Package pipeline's doc
// describes how an engine uses it.
package remote
