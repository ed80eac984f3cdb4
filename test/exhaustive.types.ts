/**
 * Compile-time proof that handlers must be exhaustive: each
 * `@ts-expect-error` below fails the type-check (`npm test` runs `tsc`) if the
 * omission it marks ever compiles.
 */
import { Match } from "effect"
import * as A2AClientError from "../src/A2AClientError.js"
import * as RemoteOutcome from "../src/RemoteOutcome.js"

const outcomeCases = {
  Completed: () => 1,
  Failed: () => 2,
  Canceled: () => 3,
  Rejected: () => 4,
  InputRequired: () => 5,
  AuthRequired: () => 6
}

export const allOutcomes = RemoteOutcome.$match(outcomeCases)

export const withoutAuthRequired = RemoteOutcome.$match(
  // @ts-expect-error AuthRequired is not handled
  { Completed: () => 1, Failed: () => 2, Canceled: () => 3, Rejected: () => 4, InputRequired: () => 5 }
)

export const withoutFailed = RemoteOutcome.$match(
  // @ts-expect-error Failed is not handled
  { Completed: () => 1, Canceled: () => 3, Rejected: () => 4, InputRequired: () => 5, AuthRequired: () => 6 }
)

export const withMatchModule = Match.type<RemoteOutcome.RemoteOutcome>().pipe(
  Match.tag("Completed", () => 1),
  Match.tag("Failed", () => 2),
  Match.tag("Canceled", () => 3),
  Match.tag("Rejected", () => 4),
  Match.tag("InputRequired", () => 5),
  // @ts-expect-error AuthRequired is left, so the match is not exhaustive
  Match.exhaustive
)

const reasonCases = {
  ConnectionRefused: () => 1,
  ConnectionLost: () => 2,
  Timeout: () => 3,
  Aborted: () => 4,
  HttpStatus: () => 5,
  ProtocolError: () => 6,
  InvalidResponse: () => 7,
  StreamInterrupted: () => 8,
  Unavailable: () => 9,
  InvalidRequest: () => 10
}

export const allReasons = A2AClientError.matchReason(reasonCases)

const { Timeout: _timeout, ...withoutTimeout } = reasonCases
// @ts-expect-error Timeout is not handled
export const missingTimeout = A2AClientError.matchReason(withoutTimeout)

const { StreamInterrupted: _cut, ...withoutCut } = reasonCases
// @ts-expect-error StreamInterrupted is not handled
export const missingCut = A2AClientError.matchReason(withoutCut)

export const reasonsWithMatch = (error: A2AClientError.A2AClientError) =>
  Match.value(error.reason).pipe(
    Match.when("ConnectionRefused", () => 1),
    Match.when("ConnectionLost", () => 2),
    Match.when("Timeout", () => 3),
    Match.when("Aborted", () => 4),
    Match.when("HttpStatus", () => 5),
    Match.when("ProtocolError", () => 6),
    Match.when("InvalidResponse", () => 7),
    Match.when("StreamInterrupted", () => 8),
    // @ts-expect-error Unavailable and InvalidRequest are left, so the match is not exhaustive
    Match.exhaustive
  )

export const allDeliveries = A2AClientError.matchDelivery({ NotSent: () => 1, Refused: () => 2, Unknown: () => 3 })

// @ts-expect-error Refused is not handled: a refusal must not read as "not sent" or "outcome unknown"
export const missingRefused = A2AClientError.matchDelivery({ NotSent: () => 1, Unknown: () => 3 })

export const deliveryWithMatchModule = Match.type<A2AClientError.Delivery>().pipe(
  Match.when("NotSent", () => 1),
  Match.when("Unknown", () => 3),
  // @ts-expect-error Refused is left, so the match is not exhaustive
  Match.exhaustive
)
