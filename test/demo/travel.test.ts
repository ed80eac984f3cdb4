import { describe, expect, it } from "@effect/vitest"
import { Effect, Logger, LogLevel } from "effect"
import { execFileSync } from "node:child_process"
import { vi } from "vitest"
import * as Cli from "../../src/Cli.js"
import * as ScriptedLanguageModel from "../../src/ScriptedLanguageModel.js"

describe("the worked example (npm start)", () => {
  it("runs every scenario on the embedded defaults and keeps the cause off the wire", () => {
    const out = execFileSync(process.execPath, ["--import", "tsx", "examples/travel.ts"], {
      encoding: "utf8",
      timeout: 90_000,
      stdio: ["ignore", "pipe", "pipe"]
    })
    for (const n of [1, 2, 3, 4, 5, 6, 7]) expect(out).toContain(`[${n}]`)
    const section = (n: number) =>
      out.slice(out.indexOf(`[${n}]`), out.indexOf(`[${n + 1}]`) === -1 ? undefined : out.indexOf(`[${n + 1}]`))
    expect(section(1)).toContain("Outcome (Completed)")
    expect(section(2)).toMatch(
      /REMOTE_FAILED Agent execution failed\. \(error_id: [0-9a-f]{12}\) \[retryable=true; contact=payments-oncall\]/
    )
    expect(section(2)).toContain("seat reservations made 2 (Kim, Ana once), payments tried 3")
    expect(section(3)).toContain("REMOTE_UNAVAILABLE: the request was not submitted")
    expect(section(4)).toContain("REMOTE_UNAVAILABLE: the outcome is unknown")
    expect(section(4)).not.toContain("not submitted")
    expect(section(5)).toContain("REMOTE_CIRCUIT_OPEN")
    expect(section(6)).toContain("REMOTE_CANCELED")
    const errorId = /error id:\s+([0-9a-f]{12})/.exec(section(2))![1]!
    expect(section(7)).toContain(`find-error ${errorId}`)
    expect(section(7)).toContain("connection pool exhausted")
    expect(out).toContain("the cause crossed the network: no")
    // Only the runbook shows the cause: nothing the model was told or said holds it.
    const modelLines = out.split("\n").filter((l) => /model (was told|said):/.test(l)).join("\n")
    expect(modelLines).not.toContain("pool exhausted")
    for (const line of out.split("\n").filter((l) => l.includes("model said:") && l.includes("REMOTE_"))) {
      expect(line).not.toContain("confirmed.")
    }
  }, 120_000)

  it("Cli.runDemoWith runs the same scenarios against the model it is given", async () => {
    const model = ScriptedLanguageModel.make(ScriptedLanguageModel.delegates("booking"))
    const printed: Array<string> = []
    const log = vi.spyOn(console, "log").mockImplementation((...args: Array<unknown>) =>
      void printed.push(args.join(" "))
    )
    const summary = await Effect.runPromise(
      Cli.runDemoWith(model.layer).pipe(Logger.withMinimumLogLevel(LogLevel.None))
    )
      .finally(() => log.mockRestore())
    expect(summary).toEqual({ matches: 1, reservations: 2, paymentAttempts: 3 })
    expect((await Effect.runPromise(model.requests)).length).toBeGreaterThan(0)
    const out = printed.join("\n")
    for (const n of [1, 2, 3, 4, 5, 6, 7]) expect(out).toContain(`[${n}]`)
    expect(out).toContain("the cause crossed the network: no")
  }, 120_000)
})
