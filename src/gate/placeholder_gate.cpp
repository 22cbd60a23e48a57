// placeholder: replaced by the gate stage's sources
