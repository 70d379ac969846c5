// placeholder: replaced by the transfer engine

