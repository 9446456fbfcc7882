// Internal to planner/: a linear program solved by GLPK's simplex (Debian libglpk-dev), as plain calls: add columns
// and rows, maximise or minimise, read values and row duals. GLPK stays inside planner/linear_program.cpp.
#pragma once

#include <memory>
#include <utility>
#include <vector>

namespace canopy::planner {

class LinearProgram {
 public:
  enum class Sense { maximize, minimize };

  LinearProgram();
  ~LinearProgram();
  LinearProgram(const LinearProgram&) = delete;
  LinearProgram& operator=(const LinearProgram&) = delete;

  // A column (variable) with bounds [lower, upper] (upper < 0: none) and objective coefficient; returns its index.
  int add_column(double lower, double upper, double objective);
  // A row: Σ coefficient × column, with bounds [lower, upper]; equal bounds make an equality. Returns its index.
  int add_row(const std::vector<std::pair<int, double>>& terms, double lower, double upper);
  static constexpr double kUnbounded = -1;  // as `upper` in add_column: no upper bound
  // A row `Σ terms <= upper` (no lower bound).
  int add_at_most(const std::vector<std::pair<int, double>>& terms, double upper);

  void set_objective(int column, double coefficient);
  void set_column_lower(int column, double lower);

  // Solves with the simplex method (warm from the last basis when called again). Throws canopy::InternalError if
  // GLPK reports anything but an optimal solution (every program built here is feasible and bounded).
  double solve(Sense sense);

  double value(int column) const;
  double row_dual(int row) const;  // the row's dual value (shadow price) at the optimum
  int columns() const;
  int rows() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace canopy::planner
