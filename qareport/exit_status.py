"""What `qareport` tells a scheduler by its exit status, each outcome its own number.

    0  REPORT_WRITTEN   the report was written and every gate passed
    1  GATE_FAILED      the report was written; a gate failed (--fail-on-regression, --fail-under,
                        an incomplete run)
    2  USAGE_ERROR      wrong usage or an input error (--strict): found before any work, nothing written
    3  INTERNAL_ERROR   a bug in qareport: the report was written where it could be
    4  JUDGE_FAILED     the report was written, but judgments could not be obtained (the API refused,
                        could not be reached, or failed after the SDK's retries): the judged metrics
                        they cover are marked not judged / not evaluated. Replies that came but could
                        not be used are per-case failures, not this. Also when the judge budget
                        (--judge-budget) ended the judging: the report was written but not all
                        judgments were made. Also when a judge asked for by an option
                        (--judge-model, ...) could not run at all (no API key). A failed gate's 1
                        comes first.
    5  JUDGE_BATCHES_PENDING  judge batches were submitted (--judge-batch) and are still running: nothing
                        written; the same command run again collects them (--judge-batch-wait 0, or
                        a wait that ran out)
    6  EMAIL_NOT_SENT   the report was written (and the results file, when asked for), but the email
                        (--email-to) could not be sent, after retries of transient failures: the
                        workbook is at its path for whoever sends it. A failed gate's 1 and a bug's 3
                        come first; it comes before the judge's 4 (the report says that one)
  129  HUNG_UP          SIGHUP (the terminal was closed): the same clean-up as SIGINT
  130  INTERRUPTED      SIGINT: what was half written is removed
  143  TERMINATED       SIGTERM: the same clean-up as SIGINT
"""

from __future__ import annotations

REPORT_WRITTEN = 0
GATE_FAILED = 1
USAGE_ERROR = 2
INTERNAL_ERROR = 3
JUDGE_FAILED = 4
JUDGE_BATCHES_PENDING = 5
EMAIL_NOT_SENT = 6
HUNG_UP = 129
INTERRUPTED = 130
TERMINATED = 143
