#pragma once
#include "framework/run/r.hpp"  // upward
