// cdkd's local Lambda runtime for Node.js: loads the handler named by _HANDLER from
// LAMBDA_TASK_ROOT (CommonJS or ES module; async, promise-returning or callback style) and
// loops on the Lambda Runtime API at AWS_LAMBDA_RUNTIME_API, as the Lambda service's own
// Node.js runtime does. Written for cdkd (src/lambda_runtime/bootstrap.rs embeds it).
'use strict';
const fs = require('fs');
const path = require('path');
const { pathToFileURL } = require('url');

const API = `http://${process.env.AWS_LAMBDA_RUNTIME_API}/2018-06-01/runtime`;

// Against a plain-HTTP endpoint (an emulator), an https request to the endpoint's host on the
// default port goes to the endpoint in plain HTTP: the CDK's own handlers PUT their
// cfn-response with https.request({hostname, path}) and no port, which only a real S3
// endpoint answers. The runner sets CDKD_LAMBDA_HTTPS_LOOPBACK=host:port only then.
function loopbackHttps(spec) {
  const colon = spec.lastIndexOf(':');
  const host = spec.slice(0, colon);
  const port = spec.slice(colon + 1);
  const http = require('http');
  const https = require('https');
  const original = https.request;
  const matches = (a) => {
    if (typeof a === 'string' || a instanceof URL) {
      const u = new URL(String(a));
      return u.hostname === host && (!u.port || u.port === '443');
    }
    if (a && typeof a === 'object') {
      const h = a.hostname || String(a.host || '').split(':')[0];
      return h === host && (!a.port || String(a.port) === '443');
    }
    return false;
  };
  https.request = function request(a, b, c) {
    if (!matches(a)) return original.apply(this, arguments);
    if (typeof a === 'string' || a instanceof URL) {
      const u = new URL(String(a));
      u.protocol = 'http:';
      u.port = port;
      return typeof b === 'function' ? http.request(u, b) : http.request(u, b || {}, c);
    }
    const options = { ...a, protocol: 'http:', hostname: host, port, agent: undefined };
    delete options.host;
    return http.request(options, b, c);
  };
  https.get = function get(a, b, c) {
    const req = https.request(a, b, c);
    req.end();
    return req;
  };
}
if (process.env.CDKD_LAMBDA_HTTPS_LOOPBACK) loopbackHttps(process.env.CDKD_LAMBDA_HTTPS_LOOPBACK);

function errorDocument(error) {
  if (error instanceof Error) {
    return {
      errorType: error.name || 'Error',
      errorMessage: error.message,
      trace: String(error.stack || '').split('\n'),
    };
  }
  const message = typeof error === 'string' ? error : JSON.stringify(error);
  return { errorType: 'Error', errorMessage: message, trace: [] };
}

async function post(route, body, headers) {
  await fetch(API + route, { method: 'POST', body, headers: headers || {} });
}

function typed(type, message) {
  const error = new Error(message);
  error.name = type;
  return error;
}

async function loadHandler() {
  const spec = process.env._HANDLER || '';
  const root = process.env.LAMBDA_TASK_ROOT || process.cwd();
  const dot = spec.lastIndexOf('.');
  if (dot <= 0) throw typed('Runtime.MalformedHandlerName', `Bad handler ${spec}: expected MODULE.FUNCTION`);
  const modulePath = spec.slice(0, dot);
  const functionPath = spec.slice(dot + 1);
  const base = path.resolve(root, modulePath);
  const file = ['.js', '.mjs', '.cjs'].map((ext) => base + ext).find((f) => fs.existsSync(f));
  if (!file) throw typed('Runtime.ImportModuleError', `Error: Cannot find module '${modulePath}' in ${root}`);
  let loaded;
  if (file.endsWith('.mjs')) {
    loaded = await import(pathToFileURL(file).href);
  } else {
    try {
      loaded = require(file);
    } catch (error) {
      if (error && error.code === 'ERR_REQUIRE_ESM') loaded = await import(pathToFileURL(file).href);
      else throw Object.assign(error, { name: error.name === 'Error' ? 'Runtime.ImportModuleError' : error.name });
    }
  }
  let fn = functionPath.split('.').reduce((o, k) => (o == null ? undefined : o[k]), loaded);
  if (typeof fn !== 'function' && loaded && loaded.default) {
    fn = functionPath.split('.').reduce((o, k) => (o == null ? undefined : o[k]), loaded.default);
  }
  if (typeof fn !== 'function') throw typed('Runtime.HandlerNotFound', `${modulePath}.${functionPath} is undefined or not exported`);
  return fn;
}

function invoke(handler, event, context) {
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (error, value) => {
      if (settled) return;
      settled = true;
      if (error !== null && error !== undefined) reject(error);
      else resolve(value);
    };
    context.done = settle;
    context.succeed = (value) => settle(null, value);
    context.fail = (error) => settle(error || new Error('handler failed'));
    let returned;
    try {
      returned = handler(event, context, settle);
    } catch (error) {
      settle(error);
      return;
    }
    if (returned && typeof returned.then === 'function') {
      returned.then((value) => settle(null, value), (error) => settle(error));
    } else if (handler.length < 3) {
      // Neither a promise nor a callback parameter: the return value is the result.
      settle(null, returned);
    }
  });
}

async function main() {
  let handler;
  try {
    handler = await loadHandler();
  } catch (error) {
    console.error(error);
    const doc = errorDocument(error);
    await post('/init/error', JSON.stringify(doc), { 'Lambda-Runtime-Function-Error-Type': doc.errorType });
    process.exit(1);
  }
  for (;;) {
    const next = await fetch(API + '/invocation/next');
    const requestId = next.headers.get('lambda-runtime-aws-request-id');
    const deadline = Number(next.headers.get('lambda-runtime-deadline-ms'));
    const text = await next.text();
    const env = process.env;
    const context = {
      functionName: env.AWS_LAMBDA_FUNCTION_NAME,
      functionVersion: env.AWS_LAMBDA_FUNCTION_VERSION,
      invokedFunctionArn: next.headers.get('lambda-runtime-invoked-function-arn'),
      memoryLimitInMB: env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE,
      awsRequestId: requestId,
      logGroupName: env.AWS_LAMBDA_LOG_GROUP_NAME,
      logStreamName: env.AWS_LAMBDA_LOG_STREAM_NAME,
      callbackWaitsForEmptyEventLoop: true,
      getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    };
    process.env._X_AMZN_TRACE_ID = next.headers.get('lambda-runtime-trace-id') || '';
    try {
      const event = text ? JSON.parse(text) : null;
      const result = await invoke(handler, event, context);
      await post(`/invocation/${requestId}/response`, JSON.stringify(result === undefined ? null : result));
    } catch (error) {
      console.error(error);
      const doc = errorDocument(error);
      await post(`/invocation/${requestId}/error`, JSON.stringify(doc), { 'Lambda-Runtime-Function-Error-Type': doc.errorType });
    }
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
