/* Drop-in name: code written for NCCL includes <nccl.h>; cclab's declarations live in cclab/nccl.h. */
#include "cclab/nccl.h"
