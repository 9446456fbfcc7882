// The one header a generated kernel includes: every building block of templates/. Generated code only sequences
// these primitives (waits, reduce_copy, signals) with constants filled in; the logic lives here.
#pragma once

#include "canopy/device_args.cuh"
#include "canopy/dtypes.cuh"
#include "canopy/flags.cuh"
#include "canopy/range.cuh"
#include "canopy/reduce_copy.cuh"
#include "canopy/schedule.cuh"
