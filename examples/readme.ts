/**
 * The README's first example, compiled by `npm test` so it cannot drift.
 */
import { Effect, Option } from "effect"
import { RemoteAgent, RemoteOutcome } from "effect-a2a"

export const program = Effect.gen(function*() {
  const booking = yield* RemoteAgent.RemoteAgent
  const outcome = yield* booking.send("book flight 4821 for Ana")
  return RemoteOutcome.$match({
    Completed: (o) => o.text,
    Failed: (o) => `could not book (error id ${Option.getOrElse(o.errorId, () => "none")})`,
    Canceled: () => "canceled",
    Rejected: (o) => `refused: ${o.text}`,
    InputRequired: (o) => `asks: ${o.text}`,
    AuthRequired: () => "needs sign-in"
  })(outcome)
}).pipe(
  Effect.catchTag(
    "A2AClientError",
    (e) => Effect.succeed(e.delivery === "NotSent" ? "not submitted" : "outcome unknown: no task was confirmed")
  )
)

// Resolves the card at start-up; `onCardFailure: "degrade"` starts without it instead.
export const BookingLive = RemoteAgent.layer({ name: "booking", url: "http://127.0.0.1:8000", timeout: "30 seconds" })
