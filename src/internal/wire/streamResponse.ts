/**
 * What both sides read of a `StreamResponse`: the server's push sender to
 * route an event, the client's push receiver to check it.
 *
 * @internal
 */
import type { StreamResponse } from "@a2a-js/sdk"

/** The task of an event; none for a message outside a task, which no config can name. @internal */
export const taskIdOf = (event: StreamResponse): string | undefined => {
  const payload = event.payload
  switch (payload?.$case) {
    case "task":
      return payload.value.id || undefined
    case "statusUpdate":
    case "artifactUpdate":
    case "message":
      return payload.value.taskId || undefined
    default:
      return undefined
  }
}
