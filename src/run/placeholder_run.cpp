// placeholder: replaced by the run stage's sources
