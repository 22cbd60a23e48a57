// placeholder: replaced by the measure stage's sources
