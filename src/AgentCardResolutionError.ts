/**
 * The remote agent's card could not be fetched or understood. Raised while a
 * `RemoteAgent` layer is built, so a missing remote fails start-up (or
 * degrades, when the layer is told to).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import * as internalMatch from "./internal/match.js"

/**
 * Why the card could not be resolved; the error's message says what to do
 * about each.
 *
 * @example
 * ```ts
 * import { Effect, Schedule } from "effect"
 * import { RemoteAgent } from "effect-a2a"
 *
 * // the agent may still be starting: wait while it is unreachable, fail at once on a bad card
 * const booking = RemoteAgent.make({ name: "booking", url: "http://127.0.0.1:8000" }).pipe(
 *   Effect.retry({ schedule: Schedule.spaced("1 second"), times: 10, while: (error) => error.reason === "Unreachable" })
 * )
 * ```
 * @category errors
 * @since 0.1.0
 */
export const Reason = Schema.Literal(
  "Unreachable",
  "HttpStatus",
  "InvalidJson",
  "InvalidCard",
  "NoCompatibleTransport",
  "InvalidRequest",
  "InvalidSignature",
  "UntrustedSigner",
  "Unsigned"
)

/**
 * @category errors
 * @since 0.1.0
 */
export type Reason = typeof Reason.Type

const advice: Record<Reason, string> = {
  Unreachable: "check that the agent is running and that the URL is right",
  HttpStatus: "check the URL and the card path (default /.well-known/agent-card.json)",
  InvalidJson: "the URL does not serve a JSON agent card; check that it points at an A2A agent",
  InvalidCard: "the agent serves a card that is not a valid A2A agent card; ask its owners to fix it",
  NoCompatibleTransport: "the agent offers no JSON-RPC interface; only JSON-RPC is supported",
  InvalidRequest: "the card's request could not be made, so it was not sent: check the agent's headers option",
  InvalidSignature:
    "the card was changed after it was signed, or signed in a form that cannot be checked: check that the URL serves the agent you meant, and ask its owners to re-sign its v1.0 card",
  UntrustedSigner:
    "the card is signed by a key you do not trust: check the trust option's keys (or JWKS) hold the agent's current public key, with its kid",
  Unsigned:
    "the card carries no signature: ask the agent's owners to sign it, or set trust.required to false to accept unsigned cards"
}

/**
 * @example
 * ```ts
 * import { AgentCardResolutionError } from "effect-a2a"
 *
 * new AgentCardResolutionError.AgentCardResolutionError({
 *   agent: "booking",
 *   url: "http://127.0.0.1:9999",
 *   reason: "HttpStatus",
 *   status: 404,
 *   detail: "Failed to fetch Agent Card: 404"
 * }).message
 * ```
 * @category errors
 * @since 0.1.0
 */
export class AgentCardResolutionError extends Schema.TaggedError<AgentCardResolutionError>(
  "effect-a2a/AgentCardResolutionError"
)("AgentCardResolutionError", {
  agent: Schema.String,
  url: Schema.String,
  reason: Reason,
  status: Schema.optionalWith(Schema.Int, { exact: true }),
  detail: Schema.String
}) {
  override get message(): string {
    const status = this.status === undefined ? "" : ` (HTTP ${this.status})`
    return `Cannot resolve the agent card of "${this.agent}" at ${this.url}: ${this.reason}${status}: ${this.detail}. What to do: ${
      advice[this.reason]
    }.`
  }
}

/**
 * Exhaustive matching over the `reason` of an error: leaving a reason out,
 * or adding a key that is not one (a misspelt reason), does not compile.
 *
 * @example
 * ```ts
 * import { AgentCardResolutionError } from "effect-a2a"
 *
 * // whether waiting for the agent may help, or someone must change something first
 * const mayWait = AgentCardResolutionError.matchReason({
 *   Unreachable: () => true,
 *   HttpStatus: (e) => e.status !== undefined && e.status >= 500,
 *   InvalidJson: () => false,
 *   InvalidCard: () => false,
 *   NoCompatibleTransport: () => false,
 *   InvalidRequest: () => false,
 *   InvalidSignature: () => false,
 *   UntrustedSigner: () => false,
 *   Unsigned: () => false
 * })
 * ```
 * @category pattern matching
 * @since 0.1.0
 */
export const matchReason: internalMatch.Matcher<Reason, AgentCardResolutionError> = internalMatch.onField((error) =>
  error.reason
)
