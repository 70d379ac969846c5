// placeholder: replaced by the SSD engine implementation
#include "ssd/ssd_engine.h"
