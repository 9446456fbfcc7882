// The one header a generated kernel includes: every building block of templates/. Generated code only supplies
// its Config (types and sizes) and the schedule as constant tables; the executor in schedule.cuh runs them with
// these primitives (waits, posts, reduce_copy). The logic lives here.
#pragma once

#include "canopy/device_args.cuh"
#include "canopy/dtypes.cuh"
#include "canopy/flags.cuh"
#include "canopy/range.cuh"
#include "canopy/reduce_copy.cuh"
#include "canopy/schedule.cuh"
