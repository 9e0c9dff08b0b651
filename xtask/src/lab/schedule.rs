//! The one rep scheduler: after a run's planned tasks, rounds of added reps toward a goal, until the goal is met or
//! its stop rule ends them. Two goals use it: every claim decided (a budgeted run, `budget::ClaimsDecided`; stop
//! rule: the time left) and a precision target per point (`--precision`, `precision::PrecisionTarget`; stop rule:
//! each point's reps and minutes). How many more reps decide a claim or narrow an interval is the statistics
//! module's (the budget's blocks are set by time alone; `precision::samples_for_narrower`); a goal only asks it.

use anyhow::Result;
use streamlab_record::Record;

use super::plan::Task;
use super::ui::phase;
use crate::interrupt;

/// What a goal asks for next.
pub enum Next {
    /// One round of added reps, its title and one line per point or claim saying why.
    Round { tasks: Vec<Task>, title: String, why: Vec<String> },
    /// No round brings the goal nearer within its stop rule: why (shown when not empty).
    Done(String),
}

/// A goal the added reps work toward, with its own stop rule.
pub trait Goal {
    /// The phase the terminal names its rounds by.
    fn phase(&self) -> &'static str;
    /// The next round (the `n`th), from what the run has written so far.
    fn next(&mut self, n: usize, written: &[Record]) -> Result<Next>;
}

/// Where the rounds run: what the run has written so far, and a round's tasks run (the lab's session).
pub trait Runs {
    fn written(&self) -> &[Record];
    fn run(&mut self, tasks: &[Task]) -> Result<()>;
}

/// How many reasons a round prints before "and N more".
const REASONS_SHOWN: usize = 4;

/// Rounds toward `goal`, each run on `runs`, until the goal says it is done: how many ran. Ctrl-C stops between
/// rounds; a round that fails ends them with its error.
pub fn run_rounds(goal: &mut dyn Goal, runs: &mut dyn Runs) -> Result<usize> {
    for n in 1.. {
        interrupt::check()?;
        match goal.next(n, runs.written())? {
            Next::Done(why) => {
                if !why.is_empty() {
                    phase(goal.phase(), &why);
                }
                return Ok(n - 1);
            }
            Next::Round { tasks, title, why } => {
                phase(goal.phase(), &title);
                for line in why.iter().take(REASONS_SHOWN) {
                    println!("  {line}");
                }
                if why.len() > REASONS_SHOWN {
                    println!("  and {} more", why.len() - REASONS_SHOWN);
                }
                runs.run(&tasks)?;
            }
        }
    }
    unreachable!("the rounds end when the goal is done")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A goal that wants `rounds` rounds of one task each, then is done.
    struct Count {
        rounds: usize,
        seen: Vec<usize>,
    }

    impl Goal for Count {
        fn phase(&self) -> &'static str {
            "count"
        }
        fn next(&mut self, n: usize, written: &[Record]) -> Result<Next> {
            self.seen.push(written.len());
            if n > self.rounds {
                return Ok(Next::Done(format!("{} rounds", self.rounds)));
            }
            let task = Task { rep: n as u32, ..crate::lab::task::tests::task() };
            Ok(Next::Round { tasks: vec![task], title: format!("round {n}"), why: vec!["wanted".into()] })
        }
    }

    /// A run that records one rep per task, or fails every round.
    struct Fake {
        written: Vec<Record>,
        ran: Vec<u32>,
        fails: bool,
    }

    impl Runs for Fake {
        fn written(&self) -> &[Record] {
            &self.written
        }
        fn run(&mut self, tasks: &[Task]) -> Result<()> {
            anyhow::ensure!(!self.fails, "the broker died");
            for t in tasks {
                self.ran.push(t.rep);
                self.written.push(crate::results::fixtures::record("r", &t.arm, &t.label, &[], true, t.rep, 1.0));
            }
            Ok(())
        }
    }

    #[test]
    fn rounds_run_until_the_goal_is_done_and_each_is_decided_on_what_the_last_wrote() {
        let mut goal = Count { rounds: 3, seen: Vec::new() };
        let mut runs = Fake { written: Vec::new(), ran: Vec::new(), fails: false };
        assert_eq!(run_rounds(&mut goal, &mut runs).unwrap(), 3);
        assert_eq!(runs.ran, [1, 2, 3]);
        assert_eq!(goal.seen, [0, 1, 2, 3], "each round is decided on what the rounds before it wrote");
    }

    #[test]
    fn a_failed_round_ends_the_rounds_with_its_error() {
        let mut goal = Count { rounds: 5, seen: Vec::new() };
        let mut runs = Fake { written: Vec::new(), ran: Vec::new(), fails: true };
        assert_eq!(run_rounds(&mut goal, &mut runs).unwrap_err().to_string(), "the broker died");
        assert_eq!(goal.seen.len(), 1);
    }
}
