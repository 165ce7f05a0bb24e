"""`python -m claudeloop.rehearsal`: serve a scenario on 127.0.0.1 until interrupted."""

from __future__ import annotations

import argparse
import sys
import textwrap
import threading

from claudeloop.rehearsal.loading import BUILTIN_SCENARIOS, ScenarioError, resolve_scenario
from claudeloop.rehearsal.scenario import DEFAULT_DONE_MARKER
from claudeloop.rehearsal.server import RehearsalServer

_BUILTINS = textwrap.fill(
    ", ".join(BUILTIN_SCENARIOS),
    width=88,
    initial_indent="  ",
    subsequent_indent="  ",
    break_on_hyphens=False,
)

FORMAT = f"""\
scenario files (TOML or JSON; every key is checked, unknown keys are errors):

  name, description      text, optional
  structured_output      true (default): a request offering the StructuredOutput tool
                         is a turn, the rest are probes answered "ok"; false plays the
                         done-marker fallback: every request offering tools is a turn
  done_marker            default "{DEFAULT_DONE_MARKER}"
  [usage]                input_tokens (200), output_tokens (40) reported per answer
  five_hour_window_seconds  the 5-hour window the answers announce the reset of,
                         from the server's start (default 18000)
  [[turns]]              turn N of the run (the Nth prompt in the conversation);
                         turns past the last repeat the last turn's verdict
    [[turns.steps]]      one step per kind:
      kind = "text"      text = "..."  (sent with the tool call that follows it)
      kind = "tool"      name = "Write"|"Edit"|"Bash"|..., input = {{...}};
                         "{{cwd}}" in the input becomes the CLI's working directory
      kind = "verdict"   complete, remaining_work = [...], blocked_on, summary:
                         the StructuredOutput call that ends the turn (without
                         structured output: plain text, with the marker if complete)
      kind = "marker"    text = "...": plain text followed by the done marker
                         a turn without a verdict step ends with one that is
                         complete on the last turn
  [[gates]]              make the service fail; while active a gate answers every
                         matching request (match = "all" | "turns" | "probes")
    kind                 what the service answers while the gate is active:
      window             429, the 5-hour window rejected, its reset announced
      window_silent      429, rejected, no reset announced
      weekly             429, the 7-day window rejected, its reset announced
      model_weekly       429, a model's own weekly window rejected (window =
                         seven_day_opus | seven_day_sonnet | seven_day_overage_included)
      warning            the normal answer under allowed_warning headers
      grace              the normal answer in a grace period: the 5-hour window
                         past its limit (utilization, default 1.1), still served
      overage_in_use     the normal answer on paid overage, the 5-hour window used
                         up (shape = "in_use" | "rejected_window")
      credits            400 "Your credit balance is too low ..." (API key accounts)
      credits_overage    429 rejected, extra usage out_of_credits (subscriptions)
      overage_rejected   429, the overage claim refused for overage_disabled_reason
                         (any the CLI names; default out_of_credits)
      daily_cap          429, the organization's usage paused for the day (its
                         reset announced only with announce_reset_seconds)
      auth               401 authentication_error
      model_missing      404 not_found_error, in Ollama's words
      local_load_failed  500 api_error (a local model that failed to load)
      local_busy         503 overloaded_error (Ollama's full queue)
      overloaded         529 overloaded_error
      prompt_too_long    400 "prompt is too long ..."
      litellm_unknown_model  400 "Invalid model name passed in model=..." (LiteLLM)
      litellm_no_db      400 "No connected db." (LiteLLM refusing a key it cannot check)
      litellm_upstream_error  500 "litellm.InternalServerError: ..." (its upstream failed)
      litellm_cooldown   429 "No deployments available ... in cooldown" (LiteLLM)
      org_not_allowed    403 "OAuth authentication is currently not allowed ..."
      verification_required  403 permission_error, details verification_required
      rate_limit_transient   429 rate_limit_error without the unified headers
      max_tokens         a 200 whose answer stops at the output-token cap
      model_refusal      a 200 whose answer the model refuses (stop_reason refusal)
      drop               a 200 whose answer starts, then the connection closes
      stall              the same, after stall_seconds of silence
      hang               a 200 whose answer starts, then silence with the connection
                         held open until the client gives up (a lift closes it)
      no_first_byte      the request is read, then nothing: no status, no headers,
                         the connection held open until the client gives up (a lift
                         ends it with a 500); the ledger's status is 0
      malformed          a 200 stream with a data line that is not JSON
                         (the CLI retries a broken answer once, without streaming)
    start (one of)       at_turn = N (>= 1)  |  after_seconds = S (since the server started)
    end (one of)         for_seconds = S (>= 0; 0 fails just the request that started it)
                         | for_requests = N  |  until_lift = true (POST /_rehearsal/lift)
                         | until_reset = true (the 5-hour window's reset the answers
                         announced: five_hour_window_seconds)
    message              replaces the error message
    headers              a table of response headers added to the gate's answer
                         (a 429 or a served answer) over its own
    for_model            answers only requests for a model whose name contains it
    announce_reset_seconds  rate limits, warning, grace, overage_in_use: the reset the
                         headers announce, from the gate's start (default: its end)
    utilization, overage_disabled_reason   warning (0.92, none); grace (1.1)
    stall_seconds        stall only (60)
  Every duration is multiplied by --time-scale.

example (window.toml):

  description = "The 5-hour window closes at turn 2 for 8 seconds."

  [[turns]]
  [[turns.steps]]
  kind = "tool"
  name = "Write"
  input = {{ file_path = "{{cwd}}/step1.txt", content = "one\\n" }}
  [[turns.steps]]
  kind = "verdict"
  complete = false
  remaining_work = ["step 2"]
  summary = "Wrote step1.txt."

  [[turns]]
  [[turns.steps]]
  kind = "verdict"
  complete = true
  summary = "All done."

  [[gates]]
  kind = "window"
  at_turn = 2
  for_seconds = 8

endpoints: POST /v1/messages, POST /v1/messages/count_tokens,
           GET /_rehearsal/state, POST /_rehearsal/lift

built-in scenarios:
{_BUILTINS}
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m claudeloop.rehearsal",
        # Raw, for the scenario table below; so the lines are broken here.
        description="Serve a scripted Anthropic Messages API on 127.0.0.1 that plays a model\n"
        "and the failures of the real service. Point Claude Code at it with\n"
        "ANTHROPIC_BASE_URL.",
        epilog=FORMAT,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--scenario", default="happy", metavar="NAME|FILE", help="built-in name or file"
    )
    parser.add_argument("--port", type=int, default=0, help="0 (default) picks a free port")
    parser.add_argument(
        "--time-scale", type=float, default=1.0, help="multiplies every duration (default 1)"
    )
    args = parser.parse_args(argv)
    if args.time_scale <= 0:
        parser.error("--time-scale must be > 0")
    try:
        scenario = resolve_scenario(args.scenario)
    except ScenarioError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    server = RehearsalServer(scenario, time_scale=args.time_scale, port=args.port)
    try:
        server.start()
    except (RuntimeError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"listening on {server.base_url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
