/**
 * The worked example (`npm start`): a travel orchestrator delegating to a
 * remote booking service, through every way a delegation can end. The
 * scenarios live in `src/demo/travel.ts`; `effect-a2a demo` runs the
 * same.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Effect, Logger, LogLevel } from "effect"
import * as Cli from "../src/Cli.js"

// The orchestrator's own logs would interleave with the report; the booking service logs to its file.
Cli.runDemo.pipe(
  Effect.asVoid,
  Logger.withMinimumLogLevel(LogLevel.None),
  (effect) => NodeRuntime.runMain(effect, { disablePrettyLogger: true })
)
