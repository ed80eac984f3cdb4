/**
 * A run's event bus, tapped: what the push sender and the event log see of
 * every event a run publishes.
 *
 * @internal
 */
import type { StreamResponse } from "@a2a-js/sdk"
import type { AgentExecutionEvent, ExecutionEventBus } from "@a2a-js/sdk/server"

/**
 * The SDK's `_mapEventToStreamResponse`, but for a task event, which it
 * reloads from the store: ours is whole.
 *
 * @internal
 */
export const streamResponseOf = (event: AgentExecutionEvent): StreamResponse =>
  ({ payload: { $case: event.kind, value: event.data } }) as StreamResponse

/**
 * `bus`, with each event handed to `onEvent` before it is published: what
 * `onEvent` notes of it is there when the bus's listeners take it.
 *
 * @internal
 */
export const tapped = (bus: ExecutionEventBus, onEvent: (event: AgentExecutionEvent) => void): ExecutionEventBus =>
  new Proxy(bus, {
    get(target, property) {
      if (property === "publish") {
        return (event: AgentExecutionEvent) => {
          onEvent(event)
          target.publish(event)
        }
      }
      const value: unknown = Reflect.get(target, property, target)
      return typeof value === "function" ? value.bind(target) : value
    }
  })
