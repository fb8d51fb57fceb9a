#pragma once
#include "framework/core/c.hpp"
