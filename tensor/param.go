package tensor

// Param is a trainable tensor and the gradient accumulated for it, of the
// same dtype and shape. Layers own them (nn) and optimizers update them
// (optim): both packages name this one type. Name is for messages and
// checkpoints.
type Param struct {
	Name  string
	Value *Tensor
	Grad  *Tensor
}
