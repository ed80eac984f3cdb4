/**
 * Compile-time proof that handlers must be exhaustive, and that only JSON
 * goes into data and metadata: each `@ts-expect-error` below fails the
 * type-check (`npm test` runs `tsc`) if the omission or value it marks ever
 * compiles.
 */
import { Effect, Match, Option, Schema } from "effect"
import * as A2AClientError from "../src/A2AClientError.js"
import * as AgentCardResolutionError from "../src/AgentCardResolutionError.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import * as Part from "../src/Part.js"
import type * as RemoteAgent from "../src/RemoteAgent.js"
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

// An agent's result, a bare message answer included.
export const allResults = AgentExecutor.AgentResult.$match({
  Completed: () => 1,
  InputRequired: () => 2,
  AuthRequired: () => 3,
  Rejected: () => 4,
  Message: () => 5
})

export const withoutMessage = AgentExecutor.AgentResult.$match(
  // @ts-expect-error Message is not handled
  { Completed: () => 1, InputRequired: () => 2, AuthRequired: () => 3, Rejected: () => 4 }
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

// A misspelt reason would never run: an extra key does not compile, as with RemoteOutcome.$match.
// @ts-expect-error "Timout" is not a reason
export const misspeltReason = A2AClientError.matchReason({ ...reasonCases, Timout: () => 11 })
const withExtra = { ...reasonCases, Throttled: () => 11 }
// @ts-expect-error "Throttled" is not a reason, also when the cases are built apart
export const extraReason = A2AClientError.matchReason(withExtra)
// @ts-expect-error an extra key is refused on RemoteOutcome.$match too
export const extraOutcome = RemoteOutcome.$match({ ...outcomeCases, Failled: () => 7 })

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

export const misspeltDelivery = A2AClientError.matchDelivery({
  NotSent: () => 1,
  Refused: () => 2,
  Unknown: () => 3,
  // @ts-expect-error "Refsued" is not a delivery: the refusal it means would fall to no handler
  Refsued: () => 4
})

const cardReasonCases = {
  Unreachable: () => 1,
  HttpStatus: () => 2,
  InvalidJson: () => 3,
  InvalidCard: () => 4,
  NoCompatibleTransport: () => 5,
  InvalidRequest: () => 6,
  InvalidSignature: () => 7,
  UntrustedSigner: () => 8,
  Unsigned: () => 9
}

export const allCardReasons: (error: AgentCardResolutionError.AgentCardResolutionError) => number =
  AgentCardResolutionError
    .matchReason(cardReasonCases)

const { Unsigned: _unsigned, ...withoutUnsigned } = cardReasonCases
// @ts-expect-error Unsigned is not handled
export const missingUnsigned = AgentCardResolutionError.matchReason(withoutUnsigned)

// @ts-expect-error "Unreacheable" is not a reason
export const misspeltCardReason = AgentCardResolutionError.matchReason({ ...cardReasonCases, Unreacheable: () => 10 })

export const deliveryWithMatchModule = Match.type<A2AClientError.Delivery>().pipe(
  Match.when("NotSent", () => 1),
  Match.when("Unknown", () => 3),
  // @ts-expect-error Refused is left, so the match is not exhaustive
  Match.exhaustive
)

// Only JSON in a data part, AgentExecutor.data and metadata.
export const jsonData = [
  Part.DataPart.make({ data: { flight: "4821", seats: ["12A", null], paid: true, total: 10.5 } }),
  Part.DataPart.make({ data: [1, "two", { three: [] }] }),
  Part.DataPart.make({ data: null })
]
// @ts-expect-error a Date is not JSON (it would be sent as a string, and read back as one)
export const dateData = Part.DataPart.make({ data: { at: new Date() } })
// @ts-expect-error a bigint is not JSON (JSON.stringify throws on it)
export const bigintData = Part.DataPart.make({ data: { total: 10n } })
// @ts-expect-error a Map is not JSON (it would be sent as {})
export const mapData = Part.DataPart.make({ data: new Map([["a", 1]]) })
class Seat {
  constructor(readonly row: number) {}
}
// @ts-expect-error a class instance is not JSON: encode it first
export const classData = Part.DataPart.make({ data: new Seat(12) })
// @ts-expect-error a function is not JSON
export const progressFunction = AgentExecutor.data({ format: () => "x" })
export const progressData = AgentExecutor.data({ step: 1, of: 3 })
// @ts-expect-error an array of undefined is not JSON (it would be sent as nulls)
export const undefinedItems = AgentExecutor.data([undefined])

export const metadataInput: RemoteAgent.Input = { parts: [], metadata: { channel: "web", attempt: 2, tags: ["a"] } }
// @ts-expect-error metadata is JSON too
export const dateMetadata: RemoteAgent.Input = { parts: [], metadata: { at: new Date() } }

// What compiles: object literals, `type` aliases (optional fields included, an absent one is left out),
// and what Schema encodes to.
type Booking = { readonly flight: string; readonly note?: string; readonly seats: ReadonlyArray<string> }
declare const booking: Booking
export const aliasData = Part.DataPart.make({ data: booking })
const Flight = Schema.Struct({ number: Schema.String, departs: Schema.Date, note: Schema.optional(Schema.String) })
declare const flight: typeof Flight.Type
export const encodedData = Part.DataPart.make({ data: Schema.encodeSync(Flight)(flight) })
// @ts-expect-error the decoded type holds a Date: encode it first
export const decodedData = Part.DataPart.make({ data: flight })
class FlightClass extends Schema.Class<FlightClass>("FlightClass")({ number: Schema.String, departs: Schema.Date }) {}
declare const flightClass: FlightClass
export const encodedClass = AgentExecutor.data(Schema.encodeSync(FlightClass)(flightClass))

// An interface has no implicit index signature, so TypeScript refuses it where an object of JSON is
// expected, even when every field is JSON: declare such shapes with `type`, or spread them into a literal
// whose fields are named.
interface BookingInterface {
  readonly flight: string
}
declare const bookingInterface: BookingInterface
// @ts-expect-error an interface-typed value is not assignable to the index signature of Part.JsonObject
export const interfaceData = Part.DataPart.make({ data: bookingInterface })
export const interfaceFields = Part.DataPart.make({ data: { flight: bookingInterface.flight } })

// A value typed any compiles: the runtime check refuses it when it is not JSON.
declare const parsed: any
export const anyData = Part.DataPart.make({ data: parsed })

// The agent reads our parts.
export const echo: AgentExecutor.Agent = (request) =>
  Effect.succeed(
    AgentExecutor.completedText(`${Part.textOf(request.message.parts)} ${request.message.metadata["channel"] ?? ""}`)
  )

// The task a message continues is read in our types: its state is our name, not the SDK's number.
export const continuesPaused = (request: AgentExecutor.AgentRequest) =>
  Option.exists(request.task, (task) => task.state === "InputRequired")
export const bySdkNumber = (request: AgentExecutor.AgentRequest) =>
  // @ts-expect-error 6 is the SDK's TASK_STATE_INPUT_REQUIRED, not a state of ours
  Option.exists(request.task, (task) => task.state === 6)
