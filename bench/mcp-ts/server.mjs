// The TypeScript MCP SDK v2 server (@modelcontextprotocol/server 2.4.0 with
// @modelcontextprotocol/node 2.1.2) serving the dispatch desk's bench tool,
// board.listOpenVisits, for rcip-mcp-cost (BENCHMARKS.md, "Cost per call
// against the Rust SDK (issue 29)"). Run by the Node that
// bench/mcp-ts/package.json pins (make bench-mcp-cost installs it into
// build/mcp-ts-peer), never the system's.
//
//   node server.mjs --mode stateless|sessions [--catalog FILE] [--serve-seconds N]
//
// The tool has the desk's own input and output schemas (read from the
// catalog, checked by the SDK through fromJsonSchema) and answers the same
// three visits as bench/mcp/python_server.py and bench/rmcp_peer.
//
// - stateless: createMcpHandler (2026-07-28 requests served from a per-request
//   McpServer, responseMode 'json'; 2025 requests by its stateless fallback)
//   through toNodeHandler.
// - sessions: one NodeStreamableHTTPServerTransport and McpServer per
//   session (initialize opens it, Mcp-Session-Id routes to it, DELETE ends it),
//   the SDK's sessionful idiom.
//
// node:http on 127.0.0.1, port 0, noDelay (TCP_NODELAY) on every connection.
// Prints "ts: serving MCP on http://127.0.0.1:PORT/mcp" once listening and
// exits after --serve-seconds (default 900) or on SIGTERM.

import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { McpServer, createMcpHandler, fromJsonSchema } from '@modelcontextprotocol/server';
import { NodeStreamableHTTPServerTransport, toNodeHandler } from '@modelcontextprotocol/node';

const TOOL = 'board.listOpenVisits';

function parseArgs(argv) {
    const args = { mode: undefined, catalog: undefined, serveSeconds: 900 };
    for (let i = 0; i < argv.length; i++) {
        const value = () => {
            if (i + 1 >= argv.length) throw new Error(`${argv[i]} needs a value`);
            return argv[++i];
        };
        switch (argv[i]) {
            case '--mode': args.mode = value(); break;
            case '--catalog': args.catalog = value(); break;
            case '--serve-seconds': args.serveSeconds = Number(value()); break;
            default: throw new Error(`unknown argument ${argv[i]}`);
        }
    }
    if (args.mode !== 'stateless' && args.mode !== 'sessions') throw new Error('--mode stateless|sessions');
    if (!(args.serveSeconds >= 1 && args.serveSeconds <= 3600)) throw new Error('--serve-seconds 1..3600');
    if (!args.catalog) throw new Error('--catalog FILE');
    return args;
}

const args = parseArgs(process.argv.slice(2));
const capability = JSON.parse(readFileSync(args.catalog, 'utf8')).capabilities.find((c) => c.id === TOOL);
if (!capability) throw new Error(`${args.catalog}: no capability ${TOOL}`);

// The desk's first three unassigned open visits, as in the other peers.
const BOARD = [
    { id: 'V-1003', site: 'Harbor Bakery', issue: 'Walk-in cooler compressor short-cycling', skill: 'hvac',
      priority: 'urgent', status: 'new', date: '2026-01-05', window: 'afternoon', notes: 1 },
    { id: 'V-1005', site: 'Riverside Gym', issue: 'Shower drains slow in the locker room', skill: 'plumbing',
      priority: 'low', status: 'new', date: '2026-01-06', window: 'morning', notes: 0 },
    { id: 'V-1009', site: 'Pine Hotel', issue: 'Room 214 thermostat is blank', skill: 'electrical',
      priority: 'normal', status: 'new', date: '2026-01-06', window: 'afternoon', notes: 0 },
];

function listOpenVisits({ priority, technicianId, unassignedOnly, limit }) {
    const visits = BOARD.filter((v) => (priority === undefined || v.priority === priority)
        && (technicianId === undefined || v.technicianId === technicianId)
        && (unassignedOnly !== true || v.technicianId === undefined)).slice(0, limit ?? BOARD.length);
    const structuredContent = { visits, total: 10 };
    return { content: [{ type: 'text', text: JSON.stringify(structuredContent) }], structuredContent };
}

const inputSchema = fromJsonSchema(capability.inputSchema);
const outputSchema = fromJsonSchema(capability.outputSchema);

function newServer() {
    const server = new McpServer({ name: 'dispatchDesk', version: '1.0.0' });
    server.registerTool(TOOL, { title: capability.title, description: capability.description, inputSchema, outputSchema },
        async (input) => listOpenVisits(input));
    return server;
}

let handle;
if (args.mode === 'stateless') {
    const handler = createMcpHandler(() => newServer(), { responseMode: 'json' });
    handle = toNodeHandler(handler);
} else {
    const sessions = new Map();
    handle = async (req, res) => {
        const id = req.headers['mcp-session-id'];
        let transport = typeof id === 'string' ? sessions.get(id) : undefined;
        if (typeof id === 'string' && !transport) {
            res.writeHead(404, { 'content-type': 'application/json' });
            res.end('{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}');
            return;
        }
        if (!transport) {
            transport = new NodeStreamableHTTPServerTransport({
                sessionIdGenerator: () => randomUUID(),
                onsessioninitialized: (sid) => sessions.set(sid, transport),
            });
            transport.onclose = () => {
                if (transport.sessionId) sessions.delete(transport.sessionId);
            };
            await newServer().connect(transport);
        }
        await transport.handleRequest(req, res);
    };
}

const http = createServer({ noDelay: true }, (req, res) => {
    if (new URL(req.url ?? '/', 'http://localhost').pathname !== '/mcp') {
        res.writeHead(404).end();
        return;
    }
    handle(req, res).catch((e) => {
        if (!res.headersSent) res.writeHead(500);
        res.end(String(e));
    });
});
http.listen(0, '127.0.0.1', () => {
    const { port } = http.address();
    process.stdout.write(`ts: serving MCP on http://127.0.0.1:${port}/mcp\n`);
});
const stop = () => process.exit(0);
setTimeout(stop, args.serveSeconds * 1000).unref();
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
