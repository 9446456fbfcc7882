// busbw_plot_svg (see svg_plot.hpp).
#include "tools/svg_plot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "bench/harness/benchmark.hpp"
#include "tools/commands.hpp"

namespace canopy::cli {
namespace {
std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}
}  // namespace

std::string busbw_plot_svg(const std::string& title, const std::vector<PlotSeries>& series) {
  const double width = 720, height = 420, left = 70, right = 160, top = 40, bottom = 50;
  double x_lo = 1e300, x_hi = 0, y_hi = 0;
  for (const PlotSeries& s : series)
    for (const auto& [x, y] : s.points)
      if (x > 0) x_lo = std::min(x_lo, x), x_hi = std::max(x_hi, x), y_hi = std::max(y_hi, y);
  if (x_hi <= 0) x_lo = 1, x_hi = 2;
  if (x_hi <= x_lo) x_hi = x_lo * 2;
  if (y_hi <= 0) y_hi = 1;
  // A round top for the y axis: 1, 2 or 5 times a power of ten.
  const double magnitude = std::pow(10.0, std::floor(std::log10(y_hi)));
  double y_top = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * magnitude >= y_hi) {
      y_top = m * magnitude;
      break;
    }
  const double plot_w = width - left - right, plot_h = height - top - bottom;
  auto px = [&](double x) {
    return left + (std::log2(x) - std::log2(x_lo)) / (std::log2(x_hi) - std::log2(x_lo)) * plot_w;
  };
  auto py = [&](double y) { return top + plot_h - y / y_top * plot_h; };
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" "
      "height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect "
      "width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"22\" font-size=\"15\">{3}</text>\n",
      width, height, left, escape(title));
  for (int k = 0; k <= 5; ++k) {  // y grid
    const double y = y_top * k / 5;
    out += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" "
        "stroke=\"#ddd\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5:g}</text>\n",
        left, py(y), left + plot_w, left - 6, py(y) + 4, y);
  }
  const int first = static_cast<int>(std::ceil(std::log2(x_lo))), last = static_cast<int>(std::floor(std::log2(x_hi)));
  const int stride = std::max(1, (last - first) / 8);
  for (int e = first; e <= last; e += stride) {  // x grid at powers of two
    const double x = std::ldexp(1.0, e);
    out += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" "
        "stroke=\"#eee\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
        px(x), top, top + plot_h, top + plot_h + 16, bench_size_text(static_cast<std::uint64_t>(x)));
  }
  out += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
      "fill=\"none\" stroke=\"#333\"/>\n",
      left, top, plot_w, plot_h);
  out += fmt::format(
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">message "
      "size (bytes)</text>\n",
      left + plot_w / 2, height - 12);
  out += fmt::format(
      "<text x=\"16\" y=\"{0}\" transform=\"rotate(-90 16 "
      "{0})\" text-anchor=\"middle\">busbw (GB/s)</text>\n",
      top + plot_h / 2);
  for (std::size_t i = 0; i < series.size(); ++i) {
    const PlotSeries& s = series[i];
    std::string points;
    for (const auto& [x, y] : s.points)
      if (x > 0) points += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
    out += fmt::format(
        "<polyline fill=\"none\" stroke=\"{}\" "
        "stroke-width=\"2\" points=\"{}\"/>\n",
        s.colour, points);
    const double ly = top + 16 + 20.0 * static_cast<double>(i);
    out += fmt::format(
        "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" "
        "stroke=\"{3}\" stroke-width=\"3\"/>"
        "<text x=\"{4}\" y=\"{5}\">{6}</text>\n",
        left + plot_w + 12, ly, left + plot_w + 36, s.colour, left + plot_w + 42, ly + 4, escape(s.name));
  }
  out += "</svg>\n";
  return out;
}

}  // namespace canopy::cli
