// The HTTP limit for the bench: bare node:http answering GET /v2/api/health with the body and
// headers Baton answers it with. Usage: node scripts/bench/bare-http.mjs <port>
import { createServer } from "node:http"

const port = Number(process.argv[2] ?? 4399)
const body = "true"
createServer((request, response) => {
  if (request.method === "GET" && request.url === "/v2/api/health") {
    response.writeHead(200, { "content-type": "application/json", "content-length": body.length, "access-control-allow-origin": "*" })
    response.end(body)
    return
  }
  response.writeHead(404, { "content-type": "application/json" })
  response.end('{"detail":"Not Found"}')
}).listen(port, "127.0.0.1", () => console.log(`listening on ${port}`))
