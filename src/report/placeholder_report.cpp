// placeholder: replaced by the report stage's sources
