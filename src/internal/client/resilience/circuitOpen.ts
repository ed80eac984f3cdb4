/**
 * The error of a call a breaker rejected. Its own module, below the breaker,
 * so that `Agent.Result` can name it without depending on the breaker.
 */
import * as Duration from "effect/Duration"
import * as Schema from "effect/Schema"

/** @internal */
export class CircuitOpen extends Schema.TaggedError<CircuitOpen>("effect-a2a/CircuitOpen")("CircuitOpen", {
  agent: Schema.String,
  retryAfter: Schema.DurationFromMillis,
  state: Schema.Literal("Open", "HalfOpen")
}) {
  override get message(): string {
    return this.state === "Open"
      ? `${this.agent}: circuit open, retry after ${Duration.format(this.retryAfter)}`
      : `${this.agent}: circuit half-open, all probe calls are in flight`
  }
}
