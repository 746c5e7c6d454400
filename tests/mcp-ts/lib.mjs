// Shared by the scripts of tests/mcp-ts: the dispatch desk started on
// 127.0.0.1 port 0 (or its stdio command line), a fetch that records every
// HTTP exchange, and small checks. `make test-mcp-ts` copies the scripts
// beside build/mcp-ts/node_modules and sets RCIP_REPO and RCIP_DISPATCH_DESK.

import { spawn } from 'node:child_process';
import { join } from 'node:path';

export const REPO = process.env.RCIP_REPO ?? process.cwd();
export const DESK = process.env.RCIP_DISPATCH_DESK ?? join(REPO, 'build', 'dispatch_desk');
export const CATALOG = join(REPO, 'examples-c', 'dispatch', 'catalog.json');
export const MODERN = '2026-07-28';
// Every desk shuts itself down after this long, whatever happens here.
const SERVE_SECONDS = 60;

/** Fails the script: the message, and the desk's transcript when given. */
export function check(condition, message, transcript) {
    if (!condition) {
        if (transcript) console.error(transcript());
        throw new Error(`check failed: ${message}`);
    }
}

/** The desk's command line on stdio, for a stdio client transport. */
export function stdioArgs(eras) {
    return ['--mcp', '--catalog', CATALOG, '--mcp-options', JSON.stringify({ eras })];
}

/**
 * `dispatch_desk --mcp-http 127.0.0.1:0` with `{"eras": eras}`: resolves to
 * `{url, transcript(), stop()}` once the desk printed its one stdout line.
 * `stop()` sends SIGTERM and checks the desk exits 0.
 */
export function startHttpDesk(eras) {
    const proc = spawn(
        DESK,
        ['--mcp-http', '127.0.0.1:0', '--catalog', CATALOG, '--mcp-options', JSON.stringify({ eras }),
            '--serve-seconds', String(SERVE_SECONDS)],
        { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] }
    );
    let stderr = '';
    let stdout = '';
    proc.stderr.setEncoding('utf8').on('data', d => (stderr += d));
    const exited = new Promise(resolve => proc.on('exit', (code, signal) => resolve({ code, signal })));
    const transcript = () => stderr;
    return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
            proc.kill('SIGKILL');
            reject(new Error(`the desk printed no URL in 20 s:\n${stderr}`));
        }, 20000);
        proc.stdout.setEncoding('utf8').on('data', d => {
            stdout += d;
            const line = stdout.split('\n')[0];
            if (!stdout.includes('\n')) return;
            clearTimeout(timer);
            const prefix = 'rcip: serving MCP on ';
            if (!line.startsWith(prefix + 'http://127.0.0.1:')) {
                proc.kill('SIGKILL');
                reject(new Error(`the desk printed ${JSON.stringify(line)}:\n${stderr}`));
                return;
            }
            resolve({
                url: new URL(line.slice(prefix.length).trim()),
                transcript,
                async stop() {
                    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
                    const killer = setTimeout(() => proc.kill('SIGKILL'), 10000);
                    const { code, signal } = await exited;
                    clearTimeout(killer);
                    check(code === 0, `the desk's exit after SIGTERM: code ${code}, signal ${signal}`, transcript);
                }
            });
        });
        proc.on('error', reject);
    });
}

/**
 * A fetch that records every exchange: `{method, headers, body, status,
 * responseHeaders}` (header names lower-case, `body` the parsed JSON or
 * undefined).
 */
export function recordingFetch() {
    const exchanges = [];
    const fetchLike = async (url, init = {}) => {
        const headers = {};
        new Headers(init.headers).forEach((v, k) => (headers[k.toLowerCase()] = v));
        const body = typeof init.body === 'string' ? JSON.parse(init.body) : undefined;
        const entry = { method: init.method ?? 'GET', headers, body };
        exchanges.push(entry);
        const response = await fetch(url, init);
        entry.status = response.status;
        entry.responseHeaders = {};
        response.headers.forEach((v, k) => (entry.responseHeaders[k.toLowerCase()] = v));
        return response;
    };
    return { fetch: fetchLike, exchanges };
}

/**
 * Records the JSON-RPC messages through a client transport (`sent` and
 * `received`), wrapping its `send` and its `onmessage` as the protocol
 * layer sets it.
 */
export function recordMessages(transport) {
    const log = { sent: [], received: [] };
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
        log.sent.push(message);
        return send(message, options);
    };
    let handler;
    Object.defineProperty(transport, 'onmessage', {
        configurable: true,
        get: () =>
            handler &&
            ((message, extra) => {
                log.received.push(message);
                return handler(message, extra);
            }),
        set: h => (handler = h)
    });
    return log;
}

/** The tools of the desk that tools/list lists first, in catalog order. */
export const FIRST_TOOLS = ['board.listOpenVisits', 'visits.search'];

/** Checks a succeeded `board.listOpenVisits` result. */
export function checkOpenVisits(result, transcript) {
    check(result.isError !== true, `the call failed: ${JSON.stringify(result)}`, transcript);
    check(result._meta?.['rcip/outcome']?.status === 'succeeded', `outcome: ${JSON.stringify(result._meta)}`, transcript);
    check(Array.isArray(result.structuredContent?.visits), 'structuredContent.visits', transcript);
}

/** Runs `main`, exiting 1 with the error on failure (and 0 on success). */
export function run(name, main) {
    main().then(
        () => {
            console.log(`${name}: ok (Node ${process.version})`);
            process.exit(0);
        },
        error => {
            console.error(`${name}: FAILED`);
            console.error(error);
            process.exit(1);
        }
    );
}
