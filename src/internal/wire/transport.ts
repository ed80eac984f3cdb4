/**
 * The three A2A transports, named as cards name them in
 * `supportedInterfaces[].protocolBinding` and as the SDK's transport
 * factories name themselves: one vocabulary for the client's choice, its
 * errors and the server's interfaces.
 *
 * @internal
 */
import * as Schema from "effect/Schema"

export const Transport = Schema.Literal("JSONRPC", "HTTP+JSON", "GRPC")

export type Transport = typeof Transport.Type

/** Every transport, in the order a server lists them by default. */
export const all: ReadonlyArray<Transport> = Transport.literals
