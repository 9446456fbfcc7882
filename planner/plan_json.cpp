// plan_to_json / plan_from_json: the plan format of docs/planner.md through nlohmann::json, with field-by-field checks.
#include "planner/plan_json.hpp"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace canopy {

using nlohmann::ordered_json;

std::string plan_to_json(const Plan& plan) {
  ordered_json j;
  j["collective"] = to_string(plan.collective);
  j["topology"] = plan.topology;
  j["ranks"] = plan.ranks;
  if (plan.root) j["root"] = *plan.root;
  j["algbw_GBps"] = plan.algbw_gbps;
  j["bound_algbw_GBps"] = plan.bound_algbw_gbps;
  j["trees"] = ordered_json::array();
  for (const Tree& t : plan.trees) {
    ordered_json tree;
    tree["root"] = t.root;
    tree["direction"] = to_string(t.direction);
    tree["phase"] = t.phase;
    tree["fraction"] = t.fraction;
    tree["edges"] = ordered_json::array();
    for (const TreeEdge& e : t.edges) {
      ordered_json edge;
      edge["from"] = e.from;
      edge["to"] = e.to;
      if (!e.path.empty()) edge["path"] = e.path;
      tree["edges"].push_back(std::move(edge));
    }
    j["trees"].push_back(std::move(tree));
  }
  return j.dump(2) + "\n";
}

namespace {

class Reader {
 public:
  explicit Reader(std::string_view origin) : origin_(origin) {}

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw Error(fmt::format("{}: {}: {}", origin_, where.empty() ? "(top level)" : where, what));
  }

  const ordered_json& field(const ordered_json& obj, const std::string& where, const char* key) const {
    if (!obj.contains(key)) fail(where, fmt::format("missing field \"{}\"", key));
    return obj.at(key);
  }
  std::string string_at(const ordered_json& obj, const std::string& where, const char* key) const {
    const auto& v = field(obj, where, key);
    if (!v.is_string()) fail(join(where, key), "expected a string");
    return v.get<std::string>();
  }
  double number_at(const ordered_json& obj, const std::string& where, const char* key) const {
    const auto& v = field(obj, where, key);
    if (!v.is_number() || !std::isfinite(v.get<double>())) fail(join(where, key), "expected a finite number");
    return v.get<double>();
  }
  std::vector<std::string> strings_at(const ordered_json& v, const std::string& where) const {
    if (!v.is_array()) fail(where, "expected an array of strings");
    std::vector<std::string> out;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_string()) fail(fmt::format("{}[{}]", where, i), "expected a string");
      out.push_back(v[i].get<std::string>());
    }
    return out;
  }
  static std::string join(const std::string& where, const char* key) { return where.empty() ? key : where + "." + key; }

 private:
  std::string origin_;
};

}  // namespace

Plan plan_from_json(std::string_view text, std::string_view origin) {
  const Reader r(origin);
  ordered_json j;
  try {
    j = ordered_json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {  // parse errors, and numbers too large for a double
    throw Error(fmt::format("{}: not valid JSON: {}", origin, e.what()));
  }
  if (!j.is_object()) r.fail("", "a plan is a JSON object");
  Plan p;
  const std::string collective = r.string_at(j, "", "collective");
  const auto c = parse_collective(collective);
  if (!c) r.fail("collective", fmt::format("unknown collective '{}' (broadcast, reduce, allreduce, allgather or "
                                           "reducescatter)", collective));
  p.collective = *c;
  p.topology = r.string_at(j, "", "topology");
  p.ranks = r.strings_at(r.field(j, "", "ranks"), "ranks");
  if (j.contains("root")) p.root = r.string_at(j, "", "root");
  p.algbw_gbps = r.number_at(j, "", "algbw_GBps");
  p.bound_algbw_gbps = r.number_at(j, "", "bound_algbw_GBps");
  const auto& trees = r.field(j, "", "trees");
  if (!trees.is_array()) r.fail("trees", "expected an array");
  for (std::size_t i = 0; i < trees.size(); ++i) {
    const std::string where = fmt::format("trees[{}]", i);
    const auto& t = trees[i];
    if (!t.is_object()) r.fail(where, "expected an object");
    Tree tree;
    tree.root = r.string_at(t, where, "root");
    const std::string direction = r.string_at(t, where, "direction");
    if (direction != "in" && direction != "out") r.fail(where + ".direction", "expected \"in\" or \"out\"");
    tree.direction = direction == "in" ? TreeDirection::in : TreeDirection::out;
    const double phase = r.number_at(t, where, "phase");
    if (phase < 0 || phase != std::floor(phase) || phase > 1000) r.fail(where + ".phase", "expected an integer 0..1000");
    tree.phase = static_cast<int>(phase);
    tree.fraction = r.number_at(t, where, "fraction");
    const auto& edges = r.field(t, where, "edges");
    if (!edges.is_array()) r.fail(where + ".edges", "expected an array");
    for (std::size_t k = 0; k < edges.size(); ++k) {
      const std::string ew = fmt::format("{}.edges[{}]", where, k);
      if (!edges[k].is_object()) r.fail(ew, "expected an object");
      TreeEdge e{r.string_at(edges[k], ew, "from"), r.string_at(edges[k], ew, "to"), {}};
      if (edges[k].contains("path")) e.path = r.strings_at(edges[k].at("path"), ew + ".path");
      tree.edges.push_back(std::move(e));
    }
    p.trees.push_back(std::move(tree));
  }
  return p;
}

}  // namespace canopy
