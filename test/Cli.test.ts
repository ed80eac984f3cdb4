/**
 * The `effect-a2a` command line, run as real processes (`node src/bin.js …`,
 * the sources compiled once by `fixtures/compiled.ts`) against a real
 * playground process and real HTTP peers.
 */
import * as Command from "@effect/cli/Command"
import * as CliOptions from "@effect/cli/Options"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Console, Duration, Effect, Exit, Fiber, Logger, LogLevel, Option, Schema, Scope, Stream } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { stripVTControlCharacters } from "node:util"
import * as zlib from "node:zlib"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type * as A2AClientError from "../src/A2AClientError.js"
import * as Cli from "../src/Cli.js"
import * as internalCommands from "../src/cli/commands.js"
import * as internalFindError from "../src/cli/findError.js"
import * as internalProbe from "../src/cli/probe.js"
import * as PushReceiver from "../src/PushReceiver.js"
import * as RemoteAgent from "../src/RemoteAgent.js"
import { apiKey, serveAuthenticated } from "./fixtures/authenticatedServer.js"
import { compiled } from "./fixtures/compiled.js"
import { adkPythonDebugFailure, adkPythonErrorId, cardFor, closedPort, json, rawPeer, rpcId } from "./fixtures/peers.js"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const childEnv = (() => {
  const env = { ...process.env }
  delete env["ADK_DEBUG_ERRORS"]
  delete env["NODE_OPTIONS"]
  return env
})()

/** The command, compiled (at the first call in this file). */
const bin = () => path.join(compiled(), "src", "bin.js")

interface Result {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs the CLI to its end, killed after `timeoutMs`; `without`: packages it runs as if not installed (a pattern). */
const cli = (
  args: ReadonlyArray<string>,
  options: { readonly stdin?: Buffer | string; readonly timeoutMs?: number; readonly without?: string } = {}
) =>
  new Promise<Result>((resolve, reject) => {
    const blocked = options.without === undefined ? [] : ["--import", "./test/fixtures/blockModules.mjs"]
    const child = spawn(process.execPath, [...blocked, bin(), ...args], {
      cwd: root,
      env: options.without === undefined ? childEnv : { ...childEnv, BLOCKED_PACKAGES: options.without },
      stdio: ["pipe", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 50_000)
    child.on("error", reject)
    child.on("close", (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
    child.stdin.end(options.stdin ?? "")
  })

const decodeReport = Schema.decodeUnknownSync(Cli.ProbeReport, { onExcessProperty: "error" })
const reportKeys = [
  "channel",
  "transport",
  "outcome",
  "reason",
  "delivery",
  "status",
  "taskId",
  "contextId",
  "errorId",
  "text"
]

/** `probe --json`: exactly one JSON object on stdout, with exactly the report's keys. */
const probeJson = async (url: string, text?: string, transport?: string, extra: ReadonlyArray<string> = []) => {
  const result = await cli([
    "probe",
    url,
    "--json",
    ...(text === undefined ? [] : ["--text", text]),
    ...(transport === undefined ? [] : ["--transport", transport]),
    "--timeout",
    "10s",
    ...extra
  ])
  const lines = result.stdout.split("\n").filter((line) => line !== "")
  expect(lines, result.stderr).toHaveLength(1)
  const parsed: unknown = JSON.parse(lines[0]!)
  // `signed` is told once the card was resolved.
  expect(Object.keys(parsed as object).filter((key) => key !== "signed").sort()).toEqual([...reportKeys].sort())
  const report = decodeReport(parsed)
  if (report.channel !== "CardResolution") expect(report.signed).toBe(false)
  return { ...result, report }
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "effect-a2a-cli-"))
const logFile = path.join(tmp, "playground.log.jsonl")
const scope = Effect.runSync(Scope.make())
const playground: { url: string; printed: ReadonlyArray<string>; exited: Promise<number | null> } = {
  url: "",
  printed: [],
  exited: Promise.resolve(null)
}
let kill: () => void = () => undefined
let http500Url = ""
let refusingUrl = ""
let closedUrl = ""
let authenticatedUrl = ""

beforeAll(async () => {
  const child = spawn(
    process.execPath,
    [bin(), "playground", "--port", "0", "--grpc-port", "0", "--log-file", logFile],
    { cwd: root, env: childEnv, stdio: ["ignore", "pipe", "pipe"] }
  )
  kill = () => child.kill("SIGTERM")
  playground.exited = new Promise((resolve) => child.on("close", resolve))
  playground.url = await new Promise<string>((resolve, reject) => {
    let out = ""
    // Bounded, with room for a machine busy with other test files: its start is loading the whole library.
    const timer = setTimeout(() => reject(new Error(`the playground did not start: ${out}`)), 60_000)
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk
      const match = /^playground listening on (http:\/\/\S+)\n((?: {2}\S+ +\S+\n){3})/m.exec(out)
      if (match !== null) {
        clearTimeout(timer)
        playground.printed = match[2]!.trim().split("\n").map((line) => line.trim().replace(/ +/, " "))
        resolve(match[1]!)
      }
    })
    child.on("close", (code) => reject(new Error(`the playground exited with ${code}: ${out}`)))
  })
  const peer = await Effect.runPromise(
    Scope.extend(
      rawPeer((_req, res) => {
        res.writeHead(500, { "content-type": "text/plain" })
        res.end("boom")
      }),
      scope
    )
  )
  http500Url = peer.url
  const refusing = await Effect.runPromise(
    Scope.extend(
      rawPeer((_req, res, body) =>
        json(res, 200, { jsonrpc: "2.0", id: rpcId(body), error: { code: -32004, message: "still running" } })
      ),
      scope
    )
  )
  refusingUrl = refusing.url
  closedUrl = await Effect.runPromise(closedPort)
  // The server logs each refusal as a warning: not these tests' concern.
  const authenticated = await Effect.runPromise(
    Scope.extend(Logger.withMinimumLogLevel(serveAuthenticated, LogLevel.Error), scope)
  )
  authenticatedUrl = authenticated.server.url
}, 90_000)

afterAll(async () => {
  kill()
  const code = await Promise.race([playground.exited, new Promise((r) => setTimeout(() => r("timeout"), 10_000))])
  await Effect.runPromise(Scope.close(scope, Exit.void))
  fs.rmSync(tmp, { recursive: true, force: true })
  // Stopped by the signal, through the runtime's interruption: not killed hard.
  expect(code).toBe(130)
})

// One probe at a time: each is a fresh process that loads the whole library (about 1 s of CPU), and several at
// once, through tsx then, came near the kill timer under load from other test files.
describe("the playground", () => {
  it("serves all three transports and prints where each is, as its card lists them", async () => {
    const port = new URL(playground.url).port
    expect(playground.printed).toEqual([
      `JSONRPC ${playground.url}/a2a/jsonrpc`,
      `HTTP+JSON ${playground.url}/a2a/rest`,
      expect.stringMatching(/^GRPC 127\.0\.0\.1:\d+$/)
    ])
    expect(playground.printed[2]).not.toContain(`:${port}`)
    const card =
      await (await fetch(`${playground.url}/.well-known/agent-card.json`, { headers: { "a2a-version": "1.0" } })).json()
    const listed = card.supportedInterfaces.filter((i: { protocolVersion: string }) => i.protocolVersion === "1.0")
      .map((i: { protocolBinding: string; url: string }) => `${i.protocolBinding} ${i.url}`)
    expect(listed).toEqual(playground.printed)
  })
})

describe("probe against the playground", () => {
  it("Completed: exit 0, the text of the artifact", async () => {
    const { code, report } = await probeJson(playground.url, "complete the booking is made")
    expect(code).toBe(0)
    expect(report).toMatchObject({
      channel: "Outcome",
      // The card's first.
      transport: "JSONRPC",
      outcome: "Completed",
      reason: null,
      delivery: null,
      errorId: null,
      text: "the booking is made"
    })
    expect(report.taskId).toMatch(/\S/)
    expect(report.contextId).toMatch(/\S/)
  })

  it("Failed: exit 5 with an error id, the message stays in the server", async () => {
    const { code, report, stdout } = await probeJson(playground.url, "fail secret-abc")
    expect(code).toBe(5)
    expect(report).toMatchObject({ channel: "Outcome", outcome: "Failed", reason: null, delivery: null })
    expect(report.errorId).toMatch(/^[0-9a-f]{12}$/)
    expect(report.text).toContain(`error_id: ${report.errorId}`)
    expect(stdout).not.toContain("secret-abc")
  })

  it("Canceled by the admission hook: exit 6", async () => {
    const { code, report } = await probeJson(playground.url, "cancel")
    expect(code).toBe(6)
    expect(report).toMatchObject({ channel: "Outcome", outcome: "Canceled", errorId: null })
  })

  it("Rejected: exit 6 with the reason", async () => {
    const { code, report } = await probeJson(playground.url, "reject not my job")
    expect(code).toBe(6)
    expect(report).toMatchObject({ channel: "Outcome", outcome: "Rejected", text: "not my job" })
  })

  it("InputRequired: exit 6 with the question", async () => {
    const { code, report } = await probeJson(playground.url, "input which date?")
    expect(code).toBe(6)
    expect(report).toMatchObject({ channel: "Outcome", outcome: "InputRequired", text: "which date?" })
  })

  it("AuthRequired: exit 6", async () => {
    const { code, report } = await probeJson(playground.url, "auth")
    expect(code).toBe(6)
    expect(report).toMatchObject({ channel: "Outcome", outcome: "AuthRequired", reason: null, delivery: null })
  })

  it(
    "--transport forces one: the call goes over it, and a card that does not offer it is NoCompatibleTransport, nothing sent",
    async () => {
      for (const transport of ["GRPC", "HTTP+JSON"]) {
        const { code, report } = await probeJson(playground.url, "fail over the wire", transport)
        expect(code).toBe(5)
        expect(report).toMatchObject({
          channel: "Outcome",
          transport,
          outcome: "Failed",
          errorId: expect.stringMatching(/^[0-9a-f]{12}$/)
        })
      }
      const { code, report } = await probeJson(refusingUrl, "ping", "GRPC")
      expect(code).toBe(3)
      expect(report).toMatchObject({ channel: "CardResolution", transport: null, reason: "NoCompatibleTransport" })
      expect(report.text).toContain("--transport GRPC was asked for; the card offers JSONRPC")
    },
    60_000
  )

  it("card resolution failure: exit 3, Unreachable", async () => {
    const { code, report } = await probeJson(closedUrl)
    expect(code).toBe(3)
    expect(report).toMatchObject({
      channel: "CardResolution",
      outcome: null,
      reason: "Unreachable",
      delivery: null,
      taskId: null,
      contextId: null,
      errorId: null
    })
  })

  it("client error: a card that resolves and an endpoint answering HTTP 500, exit 4", async () => {
    const { code, report } = await probeJson(http500Url)
    expect(code).toBe(4)
    expect(report).toMatchObject({ channel: "ClientError", outcome: null, reason: "HttpStatus", delivery: "Unknown" })
  })

  it("client error: a refusal (-32004 UnsupportedOperation), delivery Refused, exit 4", async () => {
    const { code, report } = await probeJson(refusingUrl)
    expect(code).toBe(4)
    expect(report).toMatchObject({
      channel: "ClientError",
      outcome: null,
      reason: "ProtocolError",
      delivery: "Refused"
    })
  })

  it("usage errors exit 2, with the help on stderr: unknown command, bad option value", async () => {
    const results = await Promise.all([
      cli(["frobnicate"]),
      cli(["probe", playground.url, "--timeout", "soon"])
    ])
    expect(results.map((r) => r.code)).toEqual([2, 2])
    expect(results.map((r) => r.stdout)).toEqual(["", ""])
    expect(results[0]!.stderr).toContain("probe")
    expect(results[1]!.stderr).toContain("--timeout")
  })
})

describe("find-error over the playground's JSON log", () => {
  it("finds the cause of a probe's error id in the file, a gzipped copy and stdin; exit 1 for an unknown id", async () => {
    const { report } = await probeJson(playground.url, "fail secret-xyz")
    const errorId = report.errorId!
    expect(errorId).toMatch(/^[0-9a-f]{12}$/)
    const plain = fs.readFileSync(logFile)
    const gzipped = path.join(tmp, "copy.log.gz")
    fs.writeFileSync(gzipped, zlib.gzipSync(plain))

    const [fromFiles, fromStdin, unknown] = await Promise.all([
      cli(["find-error", errorId, logFile, gzipped]),
      cli(["find-error", errorId], { stdin: plain }),
      cli(["find-error", "0123456789ab", logFile, gzipped])
    ])
    const entries = (stdout: string) => stdout.split(/^(?=--- )/m).filter((entry) => entry.trim() !== "")
    const found = [...entries(fromFiles.stdout), ...entries(fromStdin.stdout)]
    expect(fromFiles.code, fromFiles.stderr).toBe(0)
    expect(fromStdin.code, fromStdin.stderr).toBe(0)
    // Exactly this failure's entry, once per source.
    expect(found.map((entry) => entry.split("\n")[0]!.replace(/:\d+$/, ""))).toEqual([
      `--- ${logFile}`,
      `--- ${gzipped}`,
      "--- stdin"
    ])
    for (const entry of found) {
      // The message line itself names the id, as ADK Java writes it: a plain grep of a text log finds it.
      expect(entry).toContain(`ERROR Runner failed to execute [error_id=${errorId}]\n`)
      expect(entry).toContain(`errorId: ${errorId}`)
      expect(entry).toContain(`taskId: ${report.taskId}`)
      expect(entry).toMatch(/cause:\n\s+PlaygroundError: secret-xyz/)
    }
    expect(unknown.code).toBe(1)
    expect(unknown.stdout).toBe("")
  })
})

/** Runs the command line in this process: its exit code and what it wrote. */
const runHere = <E>(args: ReadonlyArray<string>, extra: ReadonlyArray<Command.Command<any, never, E, any>> = []) =>
  Effect.runPromise(Effect.gen(function*() {
    const out: Array<string> = []
    const err: Array<string> = []
    const into = (lines: Array<string>) => (...text: ReadonlyArray<unknown>) =>
      Effect.sync(() => lines.push(text.join(" ")))
    const console = yield* Console.consoleWith(Effect.succeed)
    const code = yield* Cli.run(["node", "effect-a2a", ...args], { extra }).pipe(
      Effect.withConsole({ ...console, log: into(out), error: into(err) }),
      Effect.provide(NodeContext.layer),
      Logger.withMinimumLogLevel(LogLevel.None)
    )
    return { code, stdout: out.join("\n"), stderr: err.join("\n") }
  }))

/** The playground run in this process on a free port with `args`, for the scope: its URL once it listens, what it printed. */
const playgroundHere = (args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const out: Array<string> = []
    const console = yield* Console.consoleWith(Effect.succeed)
    yield* Cli.run(["node", "effect-a2a", "playground", "--port", "0", ...args]).pipe(
      Effect.withConsole({
        ...console,
        log: (...text: ReadonlyArray<unknown>) => Effect.sync(() => out.push(text.join(" ")))
      }),
      Effect.provide(NodeContext.layer),
      Logger.withMinimumLogLevel(LogLevel.None),
      Effect.forkScoped
    )
    // Ready once every start-up line is out: the URL, each transport's, and what authentication says.
    let url: string | undefined
    for (let i = 0; i < 200 && (url === undefined || out.length < 4 + (args.includes("--api-key") ? 1 : 0)); i++) {
      url = /^playground listening on (\S+)$/m.exec(out.join("\n"))?.[1]
      yield* Effect.sleep("25 millis")
    }
    if (url === undefined) return yield* Effect.dieMessage("the playground did not start")
    return { url, out }
  })

describe("the pieces", () => {
  it("extra subcommands join the root; ExitCode and usage errors become the exit code", async () => {
    const ran: Array<string> = []
    const extra = Command.make(
      "extra",
      { fail: CliOptions.boolean("fail") },
      ({ fail }) => fail ? Effect.fail(new Cli.ExitCode({ code: 7 })) : Effect.sync(() => ran.push("extra"))
    )
    expect((await runHere(["extra"], [extra])).code).toBe(0)
    expect(ran).toEqual(["extra"])
    expect((await runHere(["extra", "--fail"], [extra])).code).toBe(7)
  })

  it("find-error: 1 when no entry is found, 3 when a file cannot be read (even with a match elsewhere), 2 for a malformed id", async () => {
    const id = "0a1b2c3d4e5f"
    const file = path.join(tmp, "one-entry.log")
    fs.writeFileSync(file, `${JSON.stringify({ message: "m", annotations: { errorId: id } })}\n`)
    const missing = path.join(tmp, "missing.log")
    const [found, none, unreadable, partly, malformed] = await Promise.all([
      runHere(["find-error", id, file]),
      runHere(["find-error", "0123456789ab", file]),
      runHere(["find-error", id, missing]),
      runHere(["find-error", id, file, missing]),
      runHere(["find-error", "not-an-id", file])
    ])
    expect([found.code, none.code, unreadable.code, partly.code, malformed.code]).toEqual([0, 1, 3, 3, 2])
    expect(found.stdout).toContain(`errorId: ${id}`)
    expect(partly.stdout).toBe(found.stdout)
    expect(none.stderr).toContain("no log entry with error id 0123456789ab")
    expect(unreadable.stderr).toContain(`cannot read ${missing}`)
    expect(partly.stderr).toContain(`cannot read ${missing}`)
    expect(partly.stderr).not.toContain("no log entry")
    expect(malformed.stderr).toContain("Invalid error-id \"not-an-id\"")
  })

  it("find-error finds the ids of every known peer: twelve digits (ours, ADK Java's) and eight (ADK Python's)", async () => {
    const [java, ours] = ["3f9c0a7b12de", "0a1b2c3d4e5f"]
    const file = path.join(tmp, "peers.log")
    const lines = [
      // What our client logs of each peer's FAILED outcome, with the peer's exact text.
      { message: "remote agent failed", annotations: { errorId: adkPythonErrorId, text: adkPythonDebugFailure } },
      { message: "remote agent failed", annotations: { text: `Agent execution failed. (error_id: ${java})` } },
      // ADK Python's own log message, and ours.
      { message: `Error handling A2A request [error_id=${adkPythonErrorId}]: card 4111 declined` },
      { message: `Runner failed to execute [error_id=${ours}]` },
      // Ids that start like ADK Python's but are longer.
      {
        message: `Agent execution failed. (error_id: ${adkPythonErrorId}00)`,
        annotations: { errorId: `${adkPythonErrorId}0000` }
      }
    ]
    fs.writeFileSync(file, lines.map((line) => JSON.stringify(line)).join("\n"))
    const [python, fromJava, fromUs, tooLong] = await Promise.all([
      runHere(["find-error", adkPythonErrorId, file]),
      runHere(["find-error", java, file]),
      runHere(["find-error", ours, file]),
      runHere(["find-error", `${adkPythonErrorId}00`, file])
    ])
    expect([python.code, fromJava.code, fromUs.code, tooLong.code]).toEqual([0, 0, 0, 2])
    expect(python.stdout.match(/^--- \S+/gm)).toEqual([`--- ${file}:1`, `--- ${file}:3`])
    expect(python.stdout).toContain("ValueError: card 4111 declined")
    expect(fromJava.stdout.match(/^--- \S+/gm)).toEqual([`--- ${file}:2`])
    expect(fromUs.stdout.match(/^--- \S+/gm)).toEqual([`--- ${file}:4`])
    expect(tooLong.stderr).toContain(`Invalid error-id "${adkPythonErrorId}00"`)
  })

  it(
    "playground --max-in-flight N sheds what is over N with 429 and Retry-After; a bound under 1 is a usage error",
    async () => {
      const bad = await runHere(["playground", "--port", "0", "--max-in-flight", "0"])
      expect(bad.code).toBe(2)
      expect(bad.stderr).toContain("Invalid --max-in-flight 0")
      await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
        const { url } = yield* playgroundHere(["--max-in-flight", "1"])
        const agent = yield* RemoteAgent.make({ name: "playground", url })
        const slow = yield* Effect.fork(agent.send("sleep 3000"))
        // Until the slow one holds the only place, a quick one may still get through: bounded tries.
        let shed: A2AClientError.A2AClientError | undefined
        for (let i = 0; i < 50 && shed === undefined; i++) {
          const quick = yield* Effect.either(agent.send("complete quick"))
          if (quick._tag === "Left") shed = quick.left
          else yield* Effect.sleep("20 millis")
        }
        expect(shed).toMatchObject({ reason: "HttpStatus", status: 429, delivery: "Refused" })
        expect(shed?.retryAfter && Duration.toMillis(shed.retryAfter)).toBe(1000)
        expect((yield* Fiber.join(slow))._tag).toBe("Completed")
      })))
    },
    20_000
  )

  it(
    "playground --api-key NAME=KEY turns API keys on and says so, never printing a key; a malformed value is a usage error that does not repeat it",
    async () => {
      const malformed = await Promise.all(
        ["k-bare-9f3a", "=k-nameless-9f3a", "alice=", " =k-blank-9f3a"].map((value) =>
          runHere(["playground", "--port", "0", "--api-key", value])
        )
      )
      const shared = await runHere([
        "playground",
        "--port",
        "0",
        "--api-key",
        "alice=k-same-9f3a",
        "--api-key",
        "bob=k-same-9f3a"
      ])
      for (const result of [...malformed, shared]) {
        expect(result.code).toBe(2)
        expect(result.stderr).toContain("Invalid --api-key")
        expect(result.stderr).not.toMatch(/k-(bare|nameless|blank|same)-9f3a/)
      }
      expect(malformed[0]!.stderr).toContain("expected NAME=KEY")
      expect(shared.stderr).toContain("callers \"alice\" and \"bob\" have the same key")

      await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
        const { out, url } = yield* playgroundHere(["--api-key", "alice=k-alice-51c2", "--api-key", "bob=k-bob-0d9e"])
        expect(out).toContain("authentication on: API keys in X-API-Key, for alice, bob")
        expect(out.join("\n")).not.toMatch(/k-(alice|bob)-/)
        const post = (headers: Record<string, string>) =>
          Effect.promise(() =>
            fetch(`${url}/a2a/jsonrpc`, {
              method: "POST",
              headers: { "content-type": "application/json", "a2a-version": "1.0", ...headers },
              body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: "none" } })
            }).then(async (response) => ({
              status: response.status,
              challenge: response.headers.get("www-authenticate")
            }))
          )
        expect(yield* post({})).toEqual({ status: 401, challenge: "ApiKey header=\"X-API-Key\"" })
        expect((yield* post({ "x-api-key": "k-bob-0d9e" })).status).toBe(200)
        const card = yield* Effect.promise(() =>
          fetch(`${url}/.well-known/agent-card.json`).then((response) => response.json())
        )
        expect(card.security).toEqual([{ apiKey: [] }])
      })))
    },
    20_000
  )

  it(
    "playground serves push notifications; --allow-push-target 127.0.0.1 lets a local webhook in, which the SSRF guard otherwise refuses",
    async () => {
      const bad = await runHere(["playground", "--port", "0", "--allow-push-target", "10.0.0.0/99"])
      expect(bad.code).toBe(1)
      expect(bad.stderr).toContain("allowPushTargets")
      await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
        const receiver = yield* PushReceiver.serve()
        const strict = yield* playgroundHere([])
        const refused = yield* Effect.flip(
          (yield* RemoteAgent.make({ name: "strict", url: strict.url })).send("fail x", { push: receiver })
        )
        expect(refused).toMatchObject({ reason: "ProtocolError", delivery: "Refused" })
        const open = yield* playgroundHere(["--allow-push-target", "127.0.0.1"])
        const agent = yield* RemoteAgent.make({ name: "open", url: open.url })
        const outcome = yield* agent.send("fail db password is hunter2", { push: receiver })
        expect(outcome._tag).toBe("Failed")
        expect(outcome.text).not.toContain("hunter2")
        expect(Option.isSome(yield* receiver.delivered(outcome.taskId))).toBe(true)
      })))
    },
    20_000
  )

  it(
    "playground --conformance serves the TCK's system under test; --require-extension makes its card require the TCK's extension",
    () =>
      Effect.runPromise(Effect.scoped(Effect.gen(function*() {
        const sut = yield* playgroundHere(["--conformance"])
        expect(sut.out).toContain("serving the A2A TCK's system under test (--conformance)")
        const message = { messageId: "tck-complete-task-1", role: "ROLE_USER", parts: [{ text: "hi" }] }
        const answer = yield* Effect.promise(() =>
          fetch(`${sut.url}/a2a/jsonrpc`, {
            method: "POST",
            headers: { "content-type": "application/json", "a2a-version": "1.0" },
            body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "SendMessage", params: { message } })
          }).then((response) => response.json() as Promise<{ result?: { task?: { status?: { message?: unknown } } } }>)
        )
        expect(answer.result?.task?.status?.message).toMatchObject({ parts: [{ text: "Hello from TCK" }] })
        const required = yield* playgroundHere(["--conformance", "--require-extension"])
        const card = yield* Effect.promise(() =>
          fetch(`${required.url}/.well-known/agent-card.json`).then((response) =>
            response.json() as Promise<{ capabilities: unknown }>
          )
        )
        expect(card.capabilities).toMatchObject({
          extensions: [{ uri: "urn:a2a:tck:required-extension", required: true }]
        })
      }))),
    20_000
  )

  it("probe: an agent URL that does not parse, or is not http or https, is a usage error naming it", async () => {
    const results = await Promise.all([runHere(["probe", "not-a-url"]), runHere(["probe", "ftp://127.0.0.1/agent"])])
    expect(results.map((result) => result.code)).toEqual([2, 2])
    expect(results[0]!.stderr).toContain("Invalid agent-url \"not-a-url\"")
    expect(results[1]!.stderr).toContain("Invalid agent-url \"ftp://127.0.0.1/agent\"")
    expect(results[0]!.stderr).not.toContain("running")
    expect(internalProbe.isHttpUrl(" https://agents.example.com/.well-known/agent-card.json ")).toBe(true)
    expect(internalProbe.isHttpUrl("127.0.0.1:8000")).toBe(false)
  })

  it("without @effect/cli, an optional peer, the command says to install it, in the range package.json asks for, and exits 1", async () => {
    const result = await cli(["--version"], { without: "@effect/cli" })
    expect(result.code).toBe(1)
    expect(result.stdout).toBe("")
    expect(result.stderr).toMatch(
      /^effect-a2a: install @effect\/cli to use the effect-a2a command \(npm install @effect\/cli@\^0\.77\.2\): /
    )
  })

  it("playground on a port in use: exit 1, naming the address", async () => {
    const taken = net.createServer()
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve))
    const port = (taken.address() as net.AddressInfo).port
    try {
      const { code, stderr } = await runHere(["playground", "--port", String(port)])
      expect(code).toBe(1)
      expect(stderr).toBe(`effect-a2a playground: address 127.0.0.1:${port} is in use`)
    } finally {
      taken.close()
    }
  })

  it("matchLogLine: by annotation or by error_id text; other lines and non-JSON are skipped", () => {
    const id = "3f9c0a7b12de"
    const byAnnotation = JSON.stringify({ message: "x", annotations: { errorId: id } })
    const byText = JSON.stringify({ message: `Internal error. (error_id: ${id})`, annotations: {} })
    const other = JSON.stringify({ message: `mentions ${id} only`, annotations: { errorId: "aaaaaaaaaaaa" } })
    expect(Option.isSome(Cli.matchLogLine(byAnnotation, id))).toBe(true)
    expect(Option.isSome(Cli.matchLogLine(byText, id))).toBe(true)
    expect(Option.isNone(Cli.matchLogLine(other, id))).toBe(true)
    expect(Option.isNone(Cli.matchLogLine(`not json ${id}`, id))).toBe(true)
    expect(Option.isNone(Cli.matchLogLine(`["error_id: ${id}"]`, id))).toBe(true)
    // A part of an id is not the id.
    expect(Option.isNone(Cli.matchLogLine(byText, id.slice(0, 4)))).toBe(true)
    expect(Option.isSome(Cli.matchLogLine(JSON.stringify({ message: `error_id: ${id}`, annotations: {} }), id))).toBe(
      true
    )
  })

  it("find-error reports the line number a match is on, also after an over-long line", async () => {
    const id = "abc123abc123"
    const file = path.join(tmp, "long-line.log")
    fs.writeFileSync(
      file,
      ["{}", "x".repeat(5 * 1024 * 1024), JSON.stringify({ message: "m", annotations: { errorId: id } })].join("\n")
    )
    const matches = await Effect.runPromise(
      Stream.runCollect(
        internalFindError.search(id, { name: file, bytes: Stream.fromIterable([fs.readFileSync(file)]) })
      )
    )
    expect(Array.from(matches).map((match) => match.line)).toEqual([3])
  })

  it("boundedLines: splits across chunks, empties an over-long line (line numbers hold), keeps the last unterminated one", async () => {
    const lines = await Effect.runPromise(
      Stream.make("ab", "c\n", "x".repeat(5), "y".repeat(5), "\nshort\r\nla", "st").pipe(
        internalFindError.boundedLines(8),
        Stream.runCollect
      )
    )
    expect(Array.from(lines)).toEqual(["abc", "", "short", "last"])
  })

  it("the readable report: one line per known field", () => {
    const text = Cli.formatProbeReport({
      channel: "Outcome",
      transport: "GRPC",
      outcome: "Failed",
      reason: null,
      delivery: null,
      status: null,
      taskId: "t-1",
      contextId: "c-1",
      errorId: "3f9c0a7b12de",
      text: "Agent execution failed. (error_id: 3f9c0a7b12de)"
    })
    expect(text.split("\n")).toEqual([
      "channel:    Outcome",
      "transport:  GRPC",
      "outcome:    Failed",
      "task id:    t-1",
      "context id: c-1",
      "error id:   3f9c0a7b12de",
      "text:       Agent execution failed. (error_id: 3f9c0a7b12de)"
    ])
  })

  it("the usage lines show every repeatable option, and the files of find-error, as optional", async () => {
    const usage = async (command: string) =>
      stripVTControlCharacters((await runHere([command, "--help"])).stdout).split("\n").find((line) =>
        line.startsWith(`$ ${command}`)
      )
    expect(await usage("probe")).toContain(" [--header text...] [--api-key redacted] [--push] ")
    expect(await usage("playground")).toContain(" [--api-key text...] [--allow-push-target text...] ")
    expect(await usage("find-error")).toBe("$ find-error <error-id> [<files>...]")
  })

  it("the command line's page (docs/command-line.md) gives a synopsis of each command naming every option it has", async () => {
    const page = fs.readFileSync(path.join(root, "docs", "command-line.md"), "utf8").split("\n")
    for (const command of ["probe", "find-error", "playground", "keygen"]) {
      const usage = (await runHere([command, "--help"])).stdout.split("\n").find((line) =>
        line.includes(`$ ${command} `)
      )
      const options = usage?.match(/--[a-z-]+/g) ?? []
      const synopsis = page.find((line) => line.startsWith(`effect-a2a ${command} `)) ?? ""
      expect(options.filter((option) => !new RegExp(`\\[${option}[ \\]]`).test(synopsis)), command).toEqual([])
    }
  })

  it("help and usage errors are coloured on a terminal only, and not with NO_COLOR", async () => {
    const escape = "\x1b["
    // Piped, as every run here is.
    const [help, usage] = await Promise.all([
      cli(["probe", "--help"]),
      cli(["probe", "--timeout", "soon", "http://127.0.0.1:9"])
    ])
    expect(help.stdout).toContain("USAGE")
    expect(help.stdout).not.toContain(escape)
    expect(usage.code).toBe(2)
    expect(usage.stderr).toContain("--timeout")
    expect(usage.stderr).not.toContain(escape)
    // On a terminal (script(1) gives the command one), with NO_COLOR unset, set, and set empty (which does not count).
    const onTerminal = (noColor: string | undefined) =>
      new Promise<string>((resolve, reject) => {
        const env = { ...childEnv }
        delete env["NO_COLOR"]
        const child = spawn(
          "script",
          ["-qec", `'${process.execPath}' '${bin()}' probe --help`, "/dev/null"],
          {
            cwd: root,
            env: noColor === undefined ? env : { ...env, NO_COLOR: noColor },
            stdio: ["ignore", "pipe", "inherit"]
          }
        )
        let out = ""
        child.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk))
        const timer = setTimeout(() => child.kill("SIGKILL"), 50_000)
        child.on("error", reject)
        child.on("close", () => {
          clearTimeout(timer)
          resolve(out)
        })
      })
    const [plain, coloured, empty] = await Promise.all([onTerminal("1"), onTerminal(undefined), onTerminal("")])
    expect(plain).toContain("USAGE")
    expect(plain).not.toContain(escape)
    expect(coloured).toContain(`${escape}0;1mUSAGE`)
    expect(empty).toContain(escape)
    expect([
      internalCommands.colours({ isTTY: true }, undefined),
      internalCommands.colours({ isTTY: true }, "1"),
      internalCommands.colours({ isTTY: true }, ""),
      internalCommands.colours({ isTTY: false }, undefined),
      internalCommands.colours(undefined, undefined)
    ]).toEqual([true, false, true, false, false])
  }, 120_000)

  it("parseDuration and the exit codes", () => {
    expect(Option.map(internalProbe.parseDuration("500ms"), Duration.toMillis)).toEqual(Option.some(500))
    expect(Option.map(internalProbe.parseDuration("30s"), Duration.toMillis)).toEqual(Option.some(30_000))
    expect(Option.map(internalProbe.parseDuration("2 minutes"), Duration.toMillis)).toEqual(Option.some(120_000))
    expect(Option.map(internalProbe.parseDuration("1500"), Duration.toMillis)).toEqual(Option.some(1500))
    expect(Option.isNone(internalProbe.parseDuration("soon"))).toBe(true)
    expect(Option.isNone(internalProbe.parseDuration("0s"))).toBe(true)
    const base = {
      transport: null,
      reason: null,
      delivery: null,
      status: null,
      taskId: null,
      contextId: null,
      errorId: null,
      text: null
    }
    expect(Cli.probeExitCode({ ...base, channel: "Outcome", outcome: "Completed" })).toBe(0)
    expect(Cli.probeExitCode({ ...base, channel: "Outcome", outcome: "Failed" })).toBe(5)
    expect(Cli.probeExitCode({ ...base, channel: "Outcome", outcome: "Canceled" })).toBe(6)
    expect(Cli.probeExitCode({ ...base, channel: "CardResolution", outcome: null })).toBe(3)
    expect(Cli.probeExitCode({ ...base, channel: "ClientError", outcome: null })).toBe(4)
  })
})

describe("probe with credentials, against a server that authenticates its callers", () => {
  const transports = ["JSONRPC", "HTTP+JSON", "GRPC"] as const

  it(
    "--header and --api-key reach the server on every transport; without them, a refusal for authentication: 401, Refused, exit 4",
    async () => {
      for (const transport of transports) {
        const probeOver = (...credentials: ReadonlyArray<string>) =>
          runHere([
            "probe",
            authenticatedUrl,
            "--json",
            "--text",
            "complete in",
            "--transport",
            transport,
            ...credentials
          ])
        const [header, key, none] = await Promise.all([
          probeOver("--header", `X-API-Key: ${apiKey}`),
          probeOver("--api-key", apiKey),
          probeOver()
        ])
        for (const allowed of [header, key]) {
          expect(allowed.code, `${transport}: ${allowed.stderr}`).toBe(0)
          expect(decodeReport(JSON.parse(allowed.stdout)), transport).toMatchObject({
            channel: "Outcome",
            transport,
            outcome: "Completed",
            text: "in"
          })
        }
        expect(none.code, transport).toBe(4)
        const refused = decodeReport(JSON.parse(none.stdout))
        expect(refused, transport).toMatchObject({
          channel: "ClientError",
          transport,
          reason: "HttpStatus",
          delivery: "Refused",
          status: 401
        })
        expect(refused.text, transport).toContain(
          "refused for authentication: give credentials with --header 'Name: value' or --api-key KEY"
        )
        for (const result of [header, key, none]) expect(result.stdout + result.stderr).not.toContain(apiKey)
      }
    },
    30_000
  )

  it(
    "as a process, with every log line shown: a wrong key is refused, a right one completes, and neither value is ever printed",
    async () => {
      const wrong = "wrong-secret-c4e1d9"
      const refused = await probeJson(authenticatedUrl, "complete x", undefined, [
        "--header",
        `x-api-key: ${wrong}`,
        "--log-level",
        "debug"
      ])
      expect(refused.code, refused.stderr).toBe(4)
      expect(refused.report).toMatchObject({
        channel: "ClientError",
        reason: "HttpStatus",
        delivery: "Refused",
        status: 401
      })
      // The client logged the failed call: the logs were on, and still hold no value.
      expect(refused.stderr).toContain("HttpStatus")
      expect(refused.stdout + refused.stderr).not.toContain(wrong)
      const allowed = await cli([
        "probe",
        authenticatedUrl,
        "--text",
        "complete x",
        "--transport",
        "GRPC",
        "--api-key",
        apiKey,
        "--log-level",
        "debug"
      ])
      expect(allowed.code, allowed.stderr).toBe(0)
      expect(allowed.stdout).toContain("outcome:    Completed")
      expect(allowed.stdout + allowed.stderr).not.toContain(apiKey)
    },
    60_000
  )

  it("the headers go with the card's request too: a card behind a key is a CardResolution 401 without it, and resolves with it", async () => {
    const lockedCard = await Effect.runPromise(Scope.extend(
      rawPeer(
        (_req, res, body) =>
          json(res, 200, { jsonrpc: "2.0", id: rpcId(body), error: { code: -32004, message: "not today" } }),
        (req, res, base) =>
          req.headers["x-api-key"] === apiKey
            ? json(res, 200, cardFor(`${base}/rpc`))
            : json(res, 401, { error: "no key" }, { "www-authenticate": "ApiKey header=\"X-API-Key\"" })
      ),
      scope
    ))
    const [without, withKey] = await Promise.all([
      runHere(["probe", lockedCard.url, "--json"]),
      runHere(["probe", lockedCard.url, "--json", "--api-key", apiKey])
    ])
    expect(without.code).toBe(3)
    const refused = decodeReport(JSON.parse(without.stdout))
    expect(refused).toMatchObject({ channel: "CardResolution", reason: "HttpStatus", status: 401 })
    expect(refused.text).toContain(
      "refused for authentication: give credentials with --header 'Name: value' or --api-key KEY"
    )
    expect(withKey.code).toBe(4)
    expect(decodeReport(JSON.parse(withKey.stdout))).toMatchObject({
      channel: "ClientError",
      reason: "ProtocolError",
      delivery: "Refused",
      status: null
    })
  })

  it("a --header that is not 'Name: value', a name twice or an empty key is a usage error that never shows the value", async () => {
    const secret = "s3cret-value"
    const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
      [["--header", `X-API-Key ${secret}`], `--header #1 is not "Name: value"`],
      [["--header", "X-Trace: 1", "--header", `: ${secret}`], `--header #2 is not "Name: value"`],
      [["--header", "X-API-Key:"], `--header #1 is not "Name: value"`],
      [["--header", `X API Key: ${secret}`], `the header name "X API Key" is not an HTTP token`],
      [["--header", `X-API-Key: ${secret}\u0007`], "the value of the header X-API-Key cannot be sent"],
      [["--header", `X-API-Key: ${secret}`, "--header", `x-api-key: ${secret}`], "the header x-api-key is given twice"],
      [
        ["--api-key", secret, "--header", `X-Api-Key: ${secret}`],
        "the header X-API-Key is given twice (--api-key sends it as X-API-Key)"
      ],
      [["--api-key", " "], "--api-key is empty"]
    ]
    const results = await Promise.all(cases.map(([args]) => runHere(["probe", "http://127.0.0.1:1", ...args])))
    for (const [i, result] of results.entries()) {
      expect(result.code, cases[i]![1]).toBe(2)
      expect(result.stderr, cases[i]![1]).toContain(`Invalid credentials: ${cases[i]![1]}`)
      expect(result.stdout + result.stderr).not.toContain(secret)
    }
  })
})

describe("the playground's card", () => {
  it("is cached for a short while (max-age 10), and answers a conditional request with 304", async () => {
    const response = await fetch(`${playground.url}/.well-known/agent-card.json`, { headers: { "A2A-Version": "1.0" } })
    expect(response.status).toBe(200)
    expect(response.headers.get("cache-control")).toBe("public, max-age=10")
    const lastModified = response.headers.get("last-modified")
    expect(lastModified).not.toBeNull()
    const again = await fetch(`${playground.url}/.well-known/agent-card.json`, {
      headers: { "A2A-Version": "1.0", "if-modified-since": lastModified! }
    })
    expect(again.status).toBe(304)
  })
})
