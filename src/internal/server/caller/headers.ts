/**
 * What the server reads of a call's context: its headers.
 *
 * @internal
 */
import { type ServerCallContext, STATE_HEADERS_KEY } from "@a2a-js/sdk/server"

/** The HTTP request headers the SDK keeps in a call's context. */
export type RequestHeaders = Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

/** The request headers of a call, as the transport recorded them. */
export const headersOf = (context: ServerCallContext): RequestHeaders => {
  const headers = context.state.get(STATE_HEADERS_KEY)
  return typeof headers === "object" && headers !== null ? (headers as RequestHeaders) : {}
}
