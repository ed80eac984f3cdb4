/**
 * Requests per second of A2AServer on HTTP+JSON and on gRPC, each against
 * the `@a2a-js/sdk` server for that transport (Express `restHandler`;
 * `grpcService` on grpc-js), around the same trivial agent, with the SDK's
 * raw client on that transport as the caller; the four series interleaved
 * in one run, after a warm-up. Informative: to watch that no transport is
 * left far behind (JSON-RPC is `server-throughput`'s).
 *
 *   npx tsx bench/server-transports.ts
 */
import { ClientFactory, RestTransportFactory } from "@a2a-js/sdk/client"
import { GrpcTransportFactory } from "@a2a-js/sdk/client/grpc"
import { DefaultRequestHandler, InMemoryTaskStore } from "@a2a-js/sdk/server"
import { grpcService, UserBuilder } from "@a2a-js/sdk/server/grpc"
import type { UntypedServiceImplementation } from "@grpc/grpc-js"
import { Effect } from "effect"
import { sdkRequest } from "../test/fixtures/peers.js"
import { sdkRestPeer } from "../test/fixtures/restPeer.js"
import { cardWith, grpcServer } from "../test/fixtures/transportPeers.js"
import { median, report, runMain } from "./report.js"
import { CONCURRENCY, interleave, PER_ROUND, perRequest, round, startOurs, trivialExecutor } from "./serverLoad.js"

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 30)
const WARMUP_ROUNDS = Number(process.env.BENCH_WARMUP_ROUNDS ?? 10)

const program = Effect.gen(function*() {
  const scope = yield* Effect.scope
  const ours = yield* Effect.promise(() => startOurs(scope, { transports: ["HTTP+JSON", "GRPC"] }))
  const restPeer = yield* sdkRestPeer(trivialExecutor)
  // The handler serves what its card lists: the address goes in once the server is bound.
  const grpcCard = cardWith([{ protocolBinding: "GRPC", url: "" }])
  const handler = new DefaultRequestHandler(grpcCard, new InMemoryTaskStore(), trivialExecutor)
  const grpcPeer = yield* grpcServer(
    grpcService({
      requestHandler: handler,
      userBuilder: UserBuilder.noAuthentication
    }) as unknown as UntypedServiceImplementation
  )
  grpcCard.supportedInterfaces[0]!.url = grpcPeer.address
  const rest = new ClientFactory({ transports: [new RestTransportFactory()] })
  const grpc = new ClientFactory({ transports: [new GrpcTransportFactory()] })
  const series = [
    ["oursRest", yield* Effect.promise(() => rest.createFromUrl(ours.url))],
    ["sdkRest", yield* Effect.promise(() => rest.createFromUrl(restPeer.url))],
    ["oursGrpc", yield* Effect.promise(() => grpc.createFromUrl(ours.url))],
    ["sdkGrpc", yield* Effect.promise(() => grpc.createFromAgentCard(grpcCard))]
  ] as const
  const timed = (rounds: number) =>
    Effect.promise(() => interleave(rounds, series, ([, client]) => round(() => client.sendMessage(sdkRequest("ok")))))
  yield* timed(WARMUP_ROUNDS)
  const times = yield* timed(ROUNDS)
  const steady = perRequest(times)
  console.log(
    `concurrency ${CONCURRENCY}, ${ROUNDS} rounds of ${PER_ROUND} requests per series, interleaved, after ${WARMUP_ROUNDS} rounds of warm-up`
  )
  for (const [name, ours, sdk] of [["HTTP+JSON", "oursRest", "sdkRest"], ["gRPC", "oursGrpc", "sdkGrpc"]] as const) {
    console.log(
      `${name}: A2AServer ${(1000 / steady[ours]).toFixed(0)} req/s, SDK ${
        (1000 / steady[sdk]).toFixed(0)
      } req/s; time ours/SDK ${(steady[ours] / steady[sdk]).toFixed(2)} overall, ${
        median(times.map((time) => time[ours] / time[sdk])).toFixed(2)
      } median of rounds`
    )
  }
  report("server-transports", [
    {
      name: "HTTP+JSON: A2AServer vs SDK Express restHandler, ms per request (inverse throughput)",
      ours: steady.oursRest,
      peer: steady.sdkRest,
      unit: "ms",
      // Issue #43: faster than the SDK's server on every transport, by a tenth.
      target: "<= 0.9",
      pass: steady.oursRest / steady.sdkRest <= 0.9
    },
    {
      name: "gRPC: A2AServer vs SDK grpcService on grpc-js, ms per request (inverse throughput)",
      ours: steady.oursGrpc,
      peer: steady.sdkGrpc,
      unit: "ms",
      target: "<= 0.9",
      pass: steady.oursGrpc / steady.sdkGrpc <= 0.9
    }
  ])
})

runMain(program)
