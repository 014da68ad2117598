// fox_server.mjs: starts the fox-wamp router (npm package "fox-wamp", installed by
// run_compare.sh in a scratch directory outside the repository) on 127.0.0.1 and a free port,
// for wamp-bench comparisons. Usage:
//   node fox_server.mjs FOX_DIR PORTS_FILE
// FOX_DIR is the directory whose node_modules/ holds fox-wamp. The chosen port is written to
// PORTS_FILE as a ws:// URL (one line, the same format as wampscope's --ports-file) once the
// server listens. Stops on SIGTERM/SIGINT.
// fox-wamp creates realms on first HELLO and accepts anonymous sessions; its WebSocket gate
// only offers the wamp.2.json subprotocol.
import { createRequire } from 'node:module'
import { writeFileSync, renameSync } from 'node:fs'
import path from 'node:path'

const [foxDir, portsFile] = process.argv.slice(2)
if (!foxDir || !portsFile) {
  console.error('usage: node fox_server.mjs FOX_DIR PORTS_FILE')
  process.exit(2)
}
const require = createRequire(path.join(path.resolve(foxDir), 'package.json'))
const FoxRouter = require('fox-wamp')

const router = new FoxRouter()
const server = router.listenWAMP({ host: '127.0.0.1', port: 0 })
server.on('listening', () => {
  const port = server.address().port
  writeFileSync(portsFile + '.tmp', `ws://127.0.0.1:${port}/\n`)
  renameSync(portsFile + '.tmp', portsFile)
  console.log(`fox-wamp listening on ws://127.0.0.1:${port}/ (pid ${process.pid})`)
})
server.on('error', (err) => {
  console.error('fox-wamp server error:', err)
  process.exit(1)
})
const stop = () => {
  server.close()
  process.exit(0)
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
