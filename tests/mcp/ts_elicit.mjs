// The official MCP TypeScript SDK as a 2025 host that answers elicitations: the server asks
// for the approval itself, on the call's SSE stream, and this client's handler answers it.
// Usage: node ts_elicit.mjs <mcp url> <client key> <approve: "true" | "false">
// Prints one JSON object: what the human was asked and what the server answered.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, key, approve] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
});
const client = new Client({ name: "arkme-ts-elicit", version: "1.0.0" }, { capabilities: { elicitation: {} } });
const asked = [];
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  asked.push({ message: request.params.message, schema: request.params.requestedSchema });
  return { action: "accept", content: { approve: approve === "true" } };
});
await client.connect(transport);

const change = await client.callTool({ name: "arkme_id_change", arguments: { arkme_id: "alice_ts_sse" } });

console.log(JSON.stringify({
  protocolVersion: transport.protocolVersion ?? null,
  asked,
  change: { isError: change.isError ?? false, structuredContent: change.structuredContent },
}));
await client.close();
