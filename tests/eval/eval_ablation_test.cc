// TempoKV's ablations (tempokv_configurations()): each is TempoKV with exactly one mechanism
// switched off, and that switch changes what TempoKV commits on a short hidden-truth run.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "controller/commit_policy.h"
#include "controller/controller.h"
#include "eval/eval.h"

namespace tempokv {
namespace {

using Switch = bool TempoKvSwitches::*;

// The one mechanism each ablation must switch off, named here independently of the table.
const std::map<std::string, Switch>& expected_switch() {
  static const std::map<std::string, Switch> m = {
      {"tempokv-static", &TempoKvSwitches::error_feedback},
      {"tempokv-no-wait", &TempoKvSwitches::commit_wait},
      {"tempokv-no-chain", &TempoKvSwitches::chained_deadlines},
      {"tempokv-no-order-stats", &TempoKvSwitches::order_statistics},
      {"tempokv-no-state-ttr", &TempoKvSwitches::state_aware_ttr},
  };
  return m;
}

const Switch kAllSwitches[] = {
    &TempoKvSwitches::error_feedback,      &TempoKvSwitches::commit_wait,
    &TempoKvSwitches::chained_deadlines,   &TempoKvSwitches::order_statistics,
    &TempoKvSwitches::state_aware_ttr,     &TempoKvSwitches::commit_order,
    &TempoKvSwitches::progressive_release,
};

TEST(EvalAblation, EachAblationIsTempoKvWithExactlyItsOneMechanismOff) {
  const TempoKvConfiguration* tempokv = find_tempokv_configuration("tempokv");
  ASSERT_NE(tempokv, nullptr);
  const std::vector<std::string> ablations = tempokv_ablations();
  ASSERT_EQ(ablations.size(), expected_switch().size());
  for (const std::string& name : ablations) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(expected_switch().contains(name));
    const TempoKvConfiguration* c = find_tempokv_configuration(name);
    ASSERT_NE(c, nullptr);
    EXPECT_FALSE(c->without.empty());
    int differing = 0;
    for (Switch s : kAllSwitches) {
      if (c->switches.*s != tempokv->switches.*s) ++differing;
    }
    EXPECT_EQ(differing, 1);
    const Switch off = expected_switch().at(name);
    EXPECT_TRUE(tempokv->switches.*off);
    EXPECT_FALSE(c->switches.*off);
    // What the eval and tempokvd build from the name follows the table.
    EXPECT_TRUE(is_controller_configuration(name));
    EXPECT_EQ(projects_order_statistics(name), c->switches.order_statistics);
    EXPECT_EQ(issue_order_of(name),
              c->switches.commit_order ? IssueOrder::kCommit : IssueOrder::kUse);
  }
}

// TempoKV's configurations issue in use order but its commit-order variant; the baselines in
// commit order, their better one on the tuning set (docs/evaluation.md, "Issue order").
TEST(EvalAblation, TempoKvIssuesInUseOrderAndTheBaselinesInCommitOrder) {
  for (const char* name : {"tempokv", "tempokv-static", "tempokv-no-wait", "tempokv-progressive"}) {
    EXPECT_EQ(issue_order_of(name), IssueOrder::kUse) << name;
  }
  for (const char* name : {"tempokv-commit-order", "demand", "immediate", "queue-1", "queue-4"}) {
    EXPECT_EQ(issue_order_of(name), IssueOrder::kCommit) << name;
  }
}

EvalOptions short_hidden_run() {
  EvalOptions o;
  o.scenario = "fig4-policies";
  o.profiles_dir = TEMPOKV_PROFILES_DIR;
  o.models = {"llama-3.1-8b"};
  o.ratios = {1.0};
  o.max_requests = 24;
  return o;
}

// The commit instant of each request (relative to its arrival; -1 ns when never committed).
std::vector<Duration> commits(const EvalResult& r, size_t row) {
  std::vector<Duration> out;
  for (const RunRecords& run : r.runs) {
    if (run.row != row) continue;
    for (const RequestRecord& rec : run.records) {
      out.push_back(rec.committed ? *rec.committed - rec.arrival : Duration(-1));
    }
  }
  return out;
}

// On a short hidden-truth run each ablation commits differently from TempoKV (its switch is
// applied and bites), and the two mechanisms the eval can also switch off for every policy
// (--no-error-feedback, --wait-order-statistics off) give exactly the ablation's commits: the
// ablation differs from TempoKV in nothing else. Likewise the commit-order variant and
// --issue-order commit.
TEST(EvalAblation, EachSwitchChangesTempoKvsCommitsAndNothingElseDiffers) {
  EvalOptions o = short_hidden_run();
  o.policies = {"tempokv"};
  for (const std::string& name : tempokv_ablations()) o.policies.push_back(name);
  auto all = run_eval(o);
  ASSERT_TRUE(all.is_ok()) << all.status().to_string();
  ASSERT_EQ(all->rows.size(), o.policies.size());
  const std::vector<Duration> tempokv = commits(*all, 0);
  ASSERT_GT(tempokv.size(), 10u);
  std::map<std::string, std::vector<Duration>> by_name;
  for (size_t i = 1; i < all->rows.size(); ++i) {
    SCOPED_TRACE(all->rows[i].policy);
    by_name[all->rows[i].policy] = commits(*all, i);
    EXPECT_NE(by_name[all->rows[i].policy], tempokv);
  }

  EvalOptions plain = short_hidden_run();
  plain.policies = {"tempokv"};
  plain.error_feedback = false;
  auto no_feedback = run_eval(plain);
  ASSERT_TRUE(no_feedback.is_ok());
  EXPECT_EQ(commits(*no_feedback, 0), by_name.at("tempokv-static"));

  plain.error_feedback = true;
  plain.wait_order_statistics = false;
  auto means = run_eval(plain);
  ASSERT_TRUE(means.is_ok());
  EXPECT_EQ(commits(*means, 0), by_name.at("tempokv-no-order-stats"));

  // The commit-order variant (no ablation) commits otherwise, and exactly as TempoKV with every
  // provider issuing in commit order.
  EvalOptions variant = short_hidden_run();
  variant.policies = {"tempokv-commit-order"};
  auto by_commit = run_eval(variant);
  ASSERT_TRUE(by_commit.is_ok());
  EXPECT_NE(commits(*by_commit, 0), tempokv);
  plain.wait_order_statistics.reset();
  plain.issue_order = IssueOrder::kCommit;
  auto ordered = run_eval(plain);
  ASSERT_TRUE(ordered.is_ok());
  EXPECT_EQ(commits(*ordered, 0), commits(*by_commit, 0));
}

}  // namespace
}  // namespace tempokv
