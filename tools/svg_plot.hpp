// A small self-written SVG line plot: busbw against message size (log2 axis), one polyline per series, with axes,
// grid and legend. No dependency; `canopy simulate --plot` uses it.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace canopy::cli {

struct PlotSeries {
  std::string name;
  std::string colour;                             // an SVG colour, e.g. "#1f77b4"
  std::vector<std::pair<double, double>> points;  // (bytes, GB/s), bytes > 0
};

std::string busbw_plot_svg(const std::string& title, const std::vector<PlotSeries>& series);

}  // namespace canopy::cli
