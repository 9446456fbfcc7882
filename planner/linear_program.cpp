// LinearProgram: a GLPK problem object built column by column and row by row, solved by the primal simplex with
// scaling, messages off and the basis kept between solves.
#include "planner/linear_program.hpp"

#include <fmt/format.h>
#include <glpk.h>

#include "core/error.hpp"

namespace canopy::planner {

struct LinearProgram::Impl {
  glp_prob* problem = glp_create_prob();
  bool scaled = false;
  ~Impl() { glp_delete_prob(problem); }
};

LinearProgram::LinearProgram() : impl_(std::make_unique<Impl>()) {}
LinearProgram::~LinearProgram() = default;

int LinearProgram::add_column(double lower, double upper, double objective) {
  CANOPY_INTERNAL_ASSERT(upper < 0 || upper >= lower, "column bounds out of order");
  const int j = glp_add_cols(impl_->problem, 1);
  if (upper < 0) {
    glp_set_col_bnds(impl_->problem, j, GLP_LO, lower, 0);
  } else {
    glp_set_col_bnds(impl_->problem, j, upper == lower ? GLP_FX : GLP_DB, lower, upper);
  }
  glp_set_obj_coef(impl_->problem, j, objective);
  return j - 1;
}

namespace {

// A new row holding Σ coefficient × column (GLPK's 1-based index), bounds still to set.
int new_row(glp_prob* problem, const std::vector<std::pair<int, double>>& terms) {
  const int i = glp_add_rows(problem, 1);
  std::vector<int> index(1, 0);  // GLPK arrays are 1-based: element 0 is unused
  std::vector<double> value(1, 0.0);
  for (const auto& [column, coefficient] : terms) {
    CANOPY_INTERNAL_ASSERT(column >= 0 && column < glp_get_num_cols(problem), "row names an unknown column");
    index.push_back(column + 1);
    value.push_back(coefficient);
  }
  glp_set_mat_row(problem, i, static_cast<int>(terms.size()), index.data(), value.data());
  return i;
}

}  // namespace

int LinearProgram::add_row(const std::vector<std::pair<int, double>>& terms, double lower, double upper) {
  CANOPY_INTERNAL_ASSERT(upper >= lower, "row bounds out of order");
  const int i = new_row(impl_->problem, terms);
  glp_set_row_bnds(impl_->problem, i, upper == lower ? GLP_FX : GLP_DB, lower, upper);
  return i - 1;
}

int LinearProgram::add_at_most(const std::vector<std::pair<int, double>>& terms, double upper) {
  const int i = new_row(impl_->problem, terms);
  glp_set_row_bnds(impl_->problem, i, GLP_UP, 0, upper);
  return i - 1;
}

void LinearProgram::set_objective(int column, double coefficient) {
  glp_set_obj_coef(impl_->problem, column + 1, coefficient);
}

void LinearProgram::set_column_lower(int column, double lower) {
  glp_set_col_bnds(impl_->problem, column + 1, GLP_LO, lower, 0);
}

double LinearProgram::solve(Sense sense) {
  glp_set_obj_dir(impl_->problem, sense == Sense::maximize ? GLP_MAX : GLP_MIN);
  if (!impl_->scaled) {
    const int terminal = glp_term_out(GLP_OFF);  // scaling reports to the terminal otherwise
    glp_scale_prob(impl_->problem, GLP_SF_AUTO);
    glp_term_out(terminal);
    impl_->scaled = true;
  }
  glp_smcp parameters;
  glp_init_smcp(&parameters);
  parameters.msg_lev = GLP_MSG_OFF;
  const int code = glp_simplex(impl_->problem, &parameters);
  const int status = glp_get_status(impl_->problem);
  CANOPY_INTERNAL_ASSERT(code == 0 && status == GLP_OPT,
                         fmt::format("GLPK simplex returned {} with status {} on a {}x{} program", code, status,
                                     rows(), columns()));
  return glp_get_obj_val(impl_->problem);
}

double LinearProgram::value(int column) const { return glp_get_col_prim(impl_->problem, column + 1); }
double LinearProgram::row_dual(int row) const { return glp_get_row_dual(impl_->problem, row + 1); }
int LinearProgram::columns() const { return glp_get_num_cols(impl_->problem); }
int LinearProgram::rows() const { return glp_get_num_rows(impl_->problem); }

}  // namespace canopy::planner
