// placeholder: replaced by the store implementation
#include "store/store.h"
