/**
 * The choice of a transport from the card: the SDK's `ClientFactory` with a
 * factory for each transport this client can use, in the user's order of
 * preference, then the card's.
 *
 * @internal
 */
import type { AgentCard } from "@a2a-js/sdk"
import { type Client, ClientFactory, type DefaultAgentCardResolver, type TransportFactory } from "@a2a-js/sdk/client"
import type { Transport } from "../../wire/transport.js"
import type { Binding } from "../call/classify.js"
import * as grpc from "../transport/grpc.js"
import * as jsonRpc from "../transport/jsonRpc.js"
import * as rest from "../transport/rest.js"
import { makeTrackingFetch } from "../transport/transport.js"

/** The client of the chosen transport, and what its calls need to know of it. */
export interface Selected {
  readonly client: Client
  readonly binding: Binding
  /** gRPC was preferred, and its packages could not be loaded: another transport was chosen. */
  readonly grpcMissing: boolean
}

const noCompatible = "No compatible transport"

/** The bindings a card offers, as it names them, in its order. */
const offered = (card: AgentCard): ReadonlyArray<string> => [
  ...new Set((card.supportedInterfaces ?? []).map((i) => i.protocolBinding.toUpperCase()))
]

/**
 * A client for `card`, read as `resolver` normalizes it (a v0.3 card
 * included), as the SDK's factory does. gRPC is loaded
 * only when the card offers it or it is preferred; when it cannot be loaded,
 * the other transports are chosen from as if the card did not offer it, and
 * a card that offers nothing else fails naming what to install.
 */
export const select = async (
  card: AgentCard,
  resolver: DefaultAgentCardResolver,
  options: {
    readonly transports: ReadonlyArray<Transport> | undefined
    readonly grpcChannelCredentials: object | undefined
    readonly maxResponseBytes: number
    readonly base: typeof fetch | undefined
  }
): Promise<Selected> => {
  const normalized = resolver.normalizeAgentCard(card)
  const offers = offered(normalized)
  const preferred = options.transports ?? []
  const wantsGrpc = offers.includes("GRPC") || preferred.includes("GRPC")
  const loaded = wantsGrpc ? await grpc.make(options.grpcChannelCredentials).then((g) => g, () => undefined) : undefined
  const factories: Array<TransportFactory> = [
    jsonRpc.factory(makeTrackingFetch(options.maxResponseBytes, options.base)),
    rest.factory(makeTrackingFetch(options.maxResponseBytes, options.base, false))
  ]
  if (loaded !== undefined) factories.push(loaded.factory)
  const bindings: Record<string, Binding> = { JSONRPC: jsonRpc.binding, "HTTP+JSON": rest.binding }
  if (loaded !== undefined) bindings.GRPC = loaded.binding
  // The SDK's factory throws on a preferred transport it has no factory for.
  const factory = new ClientFactory({
    transports: factories,
    preferredTransports: preferred.filter((t) => bindings[t] !== undefined),
    cardResolver: resolver,
    clientConfig: { polling: false }
  })
  let client: Client
  try {
    client = await factory.createFromAgentCard(card)
  } catch (error) {
    if (!(error instanceof Error) || !error.message.startsWith(noCompatible)) throw error
    const grpcLost = wantsGrpc && loaded === undefined && offers.includes("GRPC")
    throw new Error(
      `${noCompatible}: the card offers ${offers.length === 0 ? "none" : offers.join(", ")}; ` +
        (grpcLost ? grpc.missing() : "this client speaks JSONRPC, HTTP+JSON and GRPC"),
      { cause: error }
    )
  }
  const binding = bindings[client.transport.protocolName.toUpperCase()]
  // Only a factory given above can have made the client.
  // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- so its protocol is one of the bindings
  return { client, binding: binding!, grpcMissing: preferred.includes("GRPC") && loaded === undefined }
}
