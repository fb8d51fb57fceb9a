#include "experiments/b/b.hpp"  // sideways
