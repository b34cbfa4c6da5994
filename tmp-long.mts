import { Keypair } from '@stellar/stellar-base'
import { pay } from './test/helpers/ledger.js'
import { freePort, httpNode, PlinthProcess, setUpBackend, sleep } from './test/helpers/server-process.js'
import { openSse } from './test/helpers/sse.js'
const setup = setUpBackend('pglite')
const server = PlinthProcess.spawn(await freePort(), setup.env)
await server.waitReady()
const node = httpNode(server.base)
const a = Keypair.random(), b = Keypair.random()
for (const k of [a, b]) await node.inject({ method: 'POST', url: '/sandbox/ledger/fund', payload: { address: k.publicKey(), amount: '10' } })
const s = await openSse(`${server.base}/ledger/transactions?cursor=now`)
await s.next()
await sleep(80_000)
const h = await pay(node, { seed: a.secret(), to: b.publicKey(), amount: '1' })
const e = await s.next(5000).catch((err) => String(err))
console.log('after 80s:', typeof e === 'string' ? e : JSON.parse(e.data).hash === h, 'comments', s.comments.length)
s.close()
await server.stop()
await setup.cleanup()
