// placeholder: replaced by the module's real code
