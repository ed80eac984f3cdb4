#!/usr/bin/env node
/**
 * The `effect-a2a` executable: runs `Cli.run` on the process's arguments
 * and exits with its code; without `@effect/cli`, says to install it and
 * exits with 1.
 *
 * @since 0.1.0
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Cause from "effect/Cause"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as fs from "node:fs"
import * as Peer from "./internal/peer.js"

// `../package.json` from both `src/bin.ts` (tsx) and `dist/bin.js`.
const version = (() => {
  try {
    const manifest: unknown = JSON.parse(fs.readFileSync(new URL("../package.json", import.meta.url), "utf8"))
    const value = typeof manifest === "object" && manifest !== null
      ? (manifest as { version?: unknown }).version
      : undefined
    return typeof value === "string" ? value : undefined
  } catch {
    return undefined
  }
})()

// `@effect/cli` is an optional peer, which only this command needs: without it, say what to install.
// Its own failure to load, a required package missing, is printed too: nothing else would report it.
Peer.load(["@effect/cli"], "the effect-a2a command", () => import("@effect/cli/Command")).pipe(
  Effect.zipRight(Effect.tryPromise({ try: () => import("./Cli.js"), catch: (cause) => ({ message: String(cause) }) })),
  Effect.matchEffect({
    onFailure: (failure) => Effect.as(Console.error(`effect-a2a: ${failure.message}`), 1),
    onSuccess: (Cli) => Cli.run(process.argv, { version })
  }),
  Effect.provide(NodeContext.layer),
  NodeRuntime.runMain({
    disableErrorReporting: true,
    disablePrettyLogger: true,
    teardown: (exit, onExit) => {
      const code = Exit.match(exit, {
        onSuccess: (value) => (typeof value === "number" ? value : 0),
        onFailure: (cause) => (Cause.isInterruptedOnly(cause) ? 130 : 1)
      })
      // Also for a natural exit: runMain calls `process.exit` only for non-zero codes.
      process.exitCode = code
      onExit(code)
    }
  })
)
