// Kernel Studio parse stub: the real header is not needed to build the AST.
#pragma once
#include "ks_prelude.h"
