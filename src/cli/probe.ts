/**
 * `effect-a2a probe`: one blocking call to a remote agent, reported as the
 * channel it ended in.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type * as jose from "jose"
import { readFileSync } from "node:fs"
import * as A2AClientError from "../A2AClientError.js"
import * as AgentCardResolutionError from "../AgentCardResolutionError.js"
import type * as Cli from "../Cli.js"
import { answerStatus } from "../internal/client/call/answerStatus.js"
import { headersProblem } from "../internal/client/call/input.js"
import { isJwks } from "../internal/client/card/trust.js"
import * as internalTransport from "../internal/wire/transport.js"
import * as Part from "../Part.js"
import * as PushReceiver from "../PushReceiver.js"
import * as RemoteAgent from "../RemoteAgent.js"
import * as RemoteOutcome from "../RemoteOutcome.js"

const NullableString = Schema.NullOr(Schema.String)

/**
 * The JSON object `probe --json` prints.
 *
 * @internal
 */
export const ProbeReport = Schema.Struct({
  channel: Schema.Literal("CardResolution", "ClientError", "Outcome"),
  /** The transport the call went over; null when no call was made. */
  transport: Schema.NullOr(internalTransport.Transport),
  outcome: Schema.NullOr(
    Schema.Literal("Completed", "Failed", "Canceled", "Rejected", "InputRequired", "AuthRequired")
  ),
  reason: NullableString,
  delivery: Schema.NullOr(A2AClientError.Delivery),
  /** The status the server answered with: HTTP's, or on gRPC its status code as HTTP numbers it (UNAUTHENTICATED 401). */
  status: Schema.NullOr(Schema.Int),
  taskId: NullableString,
  contextId: NullableString,
  errorId: NullableString,
  text: NullableString,
  /** With `--push` only: whether the outcome came by push (otherwise by the polling fallback). */
  push: Schema.optionalWith(Schema.Boolean, { exact: true }),
  /** Whether the card carries a signature, when it was resolved; with `--trust`, a signed card is one that verified. */
  signed: Schema.optionalWith(Schema.Boolean, { exact: true })
})

/** @internal */
export type ProbeReport = typeof ProbeReport.Type

const nonEmpty = (value: string | undefined): string | null => value === undefined || value === "" ? null : value

/**
 * The report of a call that ended in an outcome. `text` is the final status
 * text, or the artifacts' text when the status carries none.
 *
 * @internal
 */
export const outcomeReport = (
  outcome: RemoteOutcome.RemoteOutcome,
  transport: internalTransport.Transport | undefined = undefined
): ProbeReport => {
  const text = outcome.text !== ""
    ? outcome.text
    : Part.textOf(outcome.artifacts.flatMap((artifact) => artifact.parts))
  const kind = RemoteOutcome.$match({
    Completed: () => ({ outcome: "Completed" as const, errorId: null }),
    Failed: (failed) => ({ outcome: "Failed" as const, errorId: Option.getOrNull(RemoteOutcome.errorIdOf(failed)) }),
    Canceled: () => ({ outcome: "Canceled" as const, errorId: null }),
    Rejected: () => ({ outcome: "Rejected" as const, errorId: null }),
    InputRequired: () => ({ outcome: "InputRequired" as const, errorId: null }),
    AuthRequired: () => ({ outcome: "AuthRequired" as const, errorId: null })
  })(outcome)
  return {
    channel: "Outcome",
    transport: transport ?? null,
    outcome: kind.outcome,
    reason: null,
    delivery: null,
    status: null,
    taskId: nonEmpty(outcome.taskId),
    contextId: nonEmpty(outcome.contextId),
    errorId: kind.errorId,
    text: nonEmpty(text)
  }
}

// What a refusal for credentials asks of whoever runs the probe: the server is up, the call needs them.
const credentialsHint = (status: number | null): string =>
  status === 401 || status === 403
    ? ` (refused for authentication: give credentials with --header 'Name: value' or --api-key KEY)`
    : ""

/**
 * The report of a call that failed. `text` is the error's explanation, and
 * for a refusal for credentials (401, 403, gRPC `UNAUTHENTICATED`,
 * `PERMISSION_DENIED`) how to give them; `errorId` is the one a server put
 * in its error text (`Internal error. (error_id: …)`), when it did.
 *
 * @internal
 */
export const errorReport = (
  error: A2AClientError.A2AClientError | AgentCardResolutionError.AgentCardResolutionError
): ProbeReport => {
  if (error._tag === "AgentCardResolutionError") {
    const status = error.status ?? null
    return {
      channel: "CardResolution",
      transport: null,
      outcome: null,
      reason: error.reason,
      delivery: null,
      status,
      taskId: null,
      contextId: null,
      errorId: null,
      text: `${error.message}${credentialsHint(status)}`
    }
  }
  const status = answerStatus(error) ?? null
  return {
    channel: "ClientError",
    transport: error.transport ?? null,
    outcome: null,
    reason: error.reason,
    delivery: error.delivery,
    status,
    taskId: nonEmpty(error.taskId),
    contextId: nonEmpty(error.contextId),
    errorId: Option.getOrNull(RemoteOutcome.extractErrorId(error.detail)),
    text: error.protocolError === undefined ? `${error.message}${credentialsHint(status)}` : error.message
  }
}

/**
 * The exit code of a probe: 0 Completed, 3 card resolution, 4 client error,
 * 5 Failed, 6 any other outcome.
 *
 * @internal
 */
export const exitCode = (report: ProbeReport): number => {
  switch (report.channel) {
    case "CardResolution":
      return 3
    case "ClientError":
      return 4
    case "Outcome":
      return report.outcome === "Completed" ? 0 : report.outcome === "Failed" ? 5 : 6
  }
}

/**
 * The short readable report: one `label: value` line per known field.
 *
 * @internal
 */
export const formatReport = (report: ProbeReport): string => {
  const rows: Array<[string, string | null]> = [
    ["channel", report.channel],
    ["transport", report.transport],
    ["outcome", report.outcome],
    ["reason", report.reason],
    ["delivery", report.delivery],
    ["status", report.status === null ? null : String(report.status)],
    ["task id", report.taskId],
    ["context id", report.contextId],
    ["error id", report.errorId],
    ["pushed", report.push === undefined ? null : report.push ? "yes" : "no"],
    ["signed", report.signed === undefined ? null : report.signed ? "yes" : "no"],
    ["text", report.text]
  ]
  return rows
    .flatMap(([label, value]) =>
      value === null ? [] : [`${`${label}:`.padEnd(12)}${value.replace(/\n/g, "\n            ")}`]
    )
    .join("\n")
}

const cardSuffix = "/.well-known/agent-card.json"

/**
 * The agent's base URL; a card URL is accepted too.
 *
 * @internal
 */
export const baseUrl = (url: string): string => {
  const trimmed = url.trim()
  return trimmed.endsWith(cardSuffix) ? trimmed.slice(0, -cardSuffix.length) : trimmed
}

/**
 * Whether `url` is one `probe` can call: a URL with the scheme http or https.
 *
 * @internal
 */
export const isHttpUrl = (url: string): boolean => {
  try {
    const { protocol } = new URL(url.trim())
    return protocol === "http:" || protocol === "https:"
  } catch {
    return false
  }
}

/**
 * Resolves the card, sends one blocking message, and reports where the call
 * ended. Never fails: every ending is a report.
 *
 * @internal
 */
export const probe = (options: Cli.ProbeOptions): Effect.Effect<ProbeReport> => {
  const url = baseUrl(options.url)
  const forced = options.transport
  // Known once the card is resolved; told with whatever the call ends in.
  let signed: boolean | undefined
  return RemoteAgent.make({
    name: "probe",
    url,
    timeout: options.timeout,
    cardTimeout: options.timeout,
    ...(options.headers === undefined ? {} : { headers: options.headers }),
    ...(forced === undefined ? {} : { transports: [forced] }),
    ...(options.trust === undefined ? {} : { trust: options.trust })
  }).pipe(
    Effect.tap((agent) => {
      signed = Option.match(agent.card, {
        onNone: () => undefined,
        onSome: (card) => (card.signatures?.length ?? 0) > 0
      })
    }),
    // A preference falls back to the card's other transports; a forced one does not.
    Effect.filterOrFail(
      (agent) => forced === undefined || agent.transport === forced,
      (agent) =>
        new AgentCardResolutionError.AgentCardResolutionError({
          agent: "probe",
          url,
          reason: "NoCompatibleTransport",
          detail: `--transport ${forced} was asked for; the card offers ${
            Option.match(agent.card, {
              onNone: () => "none that can be used",
              onSome: (card) => [...new Set(card.supportedInterfaces.map((i) => i.protocolBinding))].join(", ")
            })
          }`
        })
    ),
    Effect.flatMap((agent) =>
      options.push === true
        ? sendPushed(agent, options.text)
        : Effect.map(agent.send(options.text), (outcome) => outcomeReport(outcome, agent.transport))
    ),
    Effect.either,
    Effect.map(
      Either.match({
        onLeft: (error) => options.push === true ? { ...errorReport(error), push: false } : errorReport(error),
        onRight: (report) => report
      })
    ),
    Effect.map((report): ProbeReport => signed === undefined ? report : { ...report, signed }),
    Effect.scoped
  )
}

/** A send whose outcome is awaited by push, on a receiver of the probe's own on 127.0.0.1. */
const sendPushed = (agent: RemoteAgent.RemoteAgent, text: string) =>
  Effect.gen(function*() {
    const receiver = yield* PushReceiver.serve({ host: "127.0.0.1", port: 0, name: "probe" }).pipe(
      // Nothing was sent: the probe's own webhook could not listen.
      Effect.mapError((error) =>
        new A2AClientError.A2AClientError({
          agent: "probe",
          operation: "SendMessage",
          reason: "InvalidRequest",
          delivery: "NotSent",
          detail: `the push receiver could not listen on 127.0.0.1: ${error.message}`
        })
      )
    )
    const outcome = yield* agent.send(text, { push: receiver })
    const pushed = yield* receiver.delivered(outcome.taskId)
    return { ...outcomeReport(outcome, agent.transport), push: Option.isSome(pushed) }
  })

const durationPattern = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)?$/

/**
 * Parses `--timeout`: `500ms`, `30s`, `2m`, `1h`, Effect's `30 seconds`, or
 * a bare number of milliseconds.
 *
 * @internal
 */
export const parseDuration = (input: string): Option.Option<Duration.Duration> => {
  const trimmed = input.trim()
  const short = durationPattern.exec(trimmed)
  if (short !== null) {
    const value = Number(short[1])
    const unit = short[2] ?? "ms"
    const millis = unit === "ms"
      ? value
      : unit === "s"
      ? value * 1000
      : unit === "m"
      ? value * 60_000
      : value * 3_600_000
    return millis > 0 ? Option.some(Duration.millis(millis)) : Option.none()
  }
  return Option.filter(Duration.decodeUnknown(trimmed), (d) => Duration.isFinite(d) && Duration.toMillis(d) > 0)
}

/**
 * The header `--api-key` sends.
 *
 * @internal
 */
export const apiKeyHeader = "X-API-Key"

/**
 * The headers of `--header 'Name: value'` (repeatable) and `--api-key KEY`,
 * their values redacted; or why they cannot be sent. The reason names a
 * header at most, never its value: a malformed credential is still one.
 *
 * @internal
 */
export const parseHeaders = (
  inputs: ReadonlyArray<Redacted.Redacted>,
  apiKey: Option.Option<Redacted.Redacted>
): Either.Either<Readonly<Record<string, Redacted.Redacted>>, string> => {
  const headers: Record<string, Redacted.Redacted> = {}
  const seen = new Set<string>()
  const add = (name: string, value: Redacted.Redacted, given: string): string | undefined => {
    // Header names are compared without case: two of one name would leave one of them unsent.
    if (seen.has(name.toLowerCase())) return `the header ${name} is given twice (${given})`
    seen.add(name.toLowerCase())
    headers[name] = value
    return undefined
  }
  for (const [i, input] of inputs.entries()) {
    const text = Redacted.value(input)
    const colon = text.indexOf(":")
    const name = text.slice(0, colon).trim()
    const value = text.slice(colon + 1).trim()
    if (colon < 0 || name === "" || value === "") {
      return Either.left(`--header #${i + 1} is not "Name: value" (a header name, a colon, then its value)`)
    }
    const twice = add(name, Redacted.make(value), "--header")
    if (twice !== undefined) return Either.left(twice)
  }
  if (Option.isSome(apiKey)) {
    if (Redacted.value(apiKey.value).trim() === "") return Either.left("--api-key is empty")
    const twice = add(
      apiKeyHeader,
      Redacted.make(Redacted.value(apiKey.value).trim()),
      `--api-key sends it as ${apiKeyHeader}`
    )
    if (twice !== undefined) return Either.left(twice)
  }
  const problem = headersProblem(headers, "the")
  return problem === undefined ? Either.right(headers) : Either.left(problem)
}

/**
 * The keys of `--trust`: a JWKS URL (http or https), fetched when the card
 * is resolved, or a file holding one public JWK or a JWKS; or why it cannot
 * be used.
 *
 * @internal
 */
export const parseTrust = (input: string): Either.Either<RemoteAgent.Trust, string> => {
  const trimmed = input.trim()
  if (isHttpUrl(trimmed)) return Either.right({ jwks: trimmed })
  let parsed: unknown
  try {
    parsed = JSON.parse(readFileSync(trimmed, "utf8"))
  } catch (error) {
    return Either.left(
      `--trust ${trimmed} is neither an http(s) JWKS URL nor a readable JSON file (${(error as Error).message})`
    )
  }
  if (isJwks(parsed)) return Either.right({ keys: parsed.keys })
  if (typeof parsed === "object" && parsed !== null && typeof (parsed as { kty?: unknown }).kty === "string") {
    // A private JWK given by mistake is trusted by its public part only.
    const { d: _d, dp: _dp, dq: _dq, p: _p, q: _q, qi: _qi, ...publicPart } = parsed as jose.JWK
    return Either.right({ keys: [publicPart] })
  }
  return Either.left(`--trust ${trimmed} holds neither a JWK (with kty) nor a JWKS (with keys)`)
}
