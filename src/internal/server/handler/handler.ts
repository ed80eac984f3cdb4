/**
 * What the server reads of the SDK's request handler: a call's headers, and
 * the handler's arguments after the executor.
 *
 * @internal
 */
import type { AgentCard } from "@a2a-js/sdk"
import {
  type DefaultRequestHandler,
  type ExecutionEventBusManager,
  type PushNotificationSender,
  type PushNotificationStore,
  type ServerCallContext,
  STATE_HEADERS_KEY
} from "@a2a-js/sdk/server"

/** The HTTP request headers the SDK keeps in a call's context. */
export type RequestHeaders = Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

/** The request headers of a call, as the transport recorded them. */
export const headersOf = (context: ServerCallContext): RequestHeaders => {
  const headers = context.state.get(STATE_HEADERS_KEY)
  return typeof headers === "object" && headers !== null ? (headers as RequestHeaders) : {}
}

/**
 * The SDK request handler's arguments after the executor: `buses`, the
 * push config store when push is on (with a sender that sends nothing), the
 * extended card, if any (signed already: the SDK's signature generator
 * would sign it again on every request), and
 * close the event bus of a task that pauses (input or auth required). Kept
 * open, it ends no stream of an AUTH_REQUIRED task, nor any resubscription
 * to a paused one, and each subscriber that leaves keeps a listener on it;
 * our runs end when they pause, and a follow-up message starts a new one.
 *
 * @internal
 */
export const handlerArguments = (
  buses: ExecutionEventBusManager,
  push: PushNotificationStore | undefined,
  extendedCard: AgentCard | undefined
): [
  ExecutionEventBusManager,
  PushNotificationStore | undefined,
  PushNotificationSender | undefined,
  AgentCard | undefined,
  undefined,
  NonNullable<ConstructorParameters<typeof DefaultRequestHandler>[8]>
] => [buses, push, push === undefined ? undefined : silentSender, extendedCard, undefined, { keepBusAliveStates: [] }]

// Our runs feed our sender (see `push.ts`); the SDK's handler, given none, would make its own.
const silentSender: PushNotificationSender = { send: () => Promise.resolve() }
