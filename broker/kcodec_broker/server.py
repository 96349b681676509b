"""The asyncio transport: a listening socket per broker and listener; each connection's protocol state is a
kcodec.protocol ServerConnection (requests out of the bytes read, responses in, written in request order).

A connection's bad input (a malformed frame, a size over the limit, an api key or version kcodec does
not know, a request before SASL authentication) closes that connection alone, with a log line; an
exception in a handler becomes UNKNOWN_SERVER_ERROR in the response (or a close). Nothing a client
sends stops the server.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import sys
from functools import lru_cache, partial
from typing import Any, Optional, Sequence, Union

import kcodec
from kcodec import definitions
from kcodec.errors import ErrorCode
from kcodec.messages import ApiVersionsRequest
from kcodec.protocol import RequestFailed, RequestReceived, ServerConnection, TokenReceived
from kcodec.protocol.aio import write_buffers
from kcodec.security.dn import DerError
from kcodec.security.principal_rules import NoMatchingRule
from kcodec.security.tls import looks_like_tls, peer_principal, refused_handshake

from . import handlers
from .context import ClusterRuntime, Context, ListenerRuntime, Session, java_host_address
from .faults import DROP
from .handlers.api_versions import unsupported_version_response
from .inbound import Inbound
from .mechanisms import sasl_server
from .state import BrokerInfo
from .unsupported import error_response

log = logging.getLogger("kcodec_broker")

API_VERSIONS = ApiVersionsRequest.API_KEY
PRODUCE = 0
CONTROLLER_APIS = {19, 20, 37}  # CreateTopics, DeleteTopics, CreatePartitions: the controller's work
FAILED_AUTHENTICATION_DELAY = 0.1  # seconds, Kafka's default
TLS_HANDSHAKE_TIMEOUT = 10.0  # seconds
# Python 3.11+: each connection's TLS handshake runs in _serve, which logs a refused one with the peer and
# the reason; on 3.10 asyncio runs it before _serve and drops a failure silently.
_HANDSHAKE_IN_SERVE = sys.version_info >= (3, 11)


class Close(Exception):
    """End this connection (after logging why)."""


@lru_cache(maxsize=None)
def _api_name(key: int) -> str:
    return definitions.api_keys().get(key, f"api{key}")


class BrokerServer:
    """One advertised broker of a cluster: a node id, a listening socket per listener, its connections."""

    def __init__(self, node_id: int, runtime: ClusterRuntime, listeners: Sequence[ListenerRuntime] = (ListenerRuntime(),),
                 rack: Optional[str] = None) -> None:
        self.node_id = node_id
        self.rack = rack
        self.runtime = runtime
        self.listeners = list(listeners)
        self.servers: list[asyncio.AbstractServer] = []
        self.connections: set[asyncio.Task[Any]] = set()
        self.endpoints: dict[str, tuple[str, int]] = {}  # listener name: the (host, port) it is bound to

    async def start(self, binds: Sequence[tuple[str, int]], advertised_host: Optional[str] = None) -> None:
        """Listen on binds[i] (host, port; port 0: ephemeral) with listeners[i]."""
        try:
            for listener, (host, port) in zip(self.listeners, binds, strict=True):
                tls = None if _HANDSHAKE_IN_SERVE else listener.tls  # None: plaintext, or _serve's handshake
                timeout = TLS_HANDSHAKE_TIMEOUT if tls is not None else None
                server = await asyncio.get_running_loop().create_server(
                    partial(self._inbound, listener), host, port, reuse_address=True, ssl=tls,
                    ssl_handshake_timeout=timeout)
                self.servers.append(server)
                self.endpoints[listener.name] = (host, server.sockets[0].getsockname()[1])
        except BaseException:
            await self.stop()
            raise
        advertised = {name: (advertised_host or host, port) for name, (host, port) in self.endpoints.items()}
        first = advertised[self.listeners[0].name]
        self.runtime.state.register(BrokerInfo(self.node_id, first[0], first[1], self.rack, advertised))
        for listener in self.listeners:
            client_auth = f", client certificates {listener.client_auth}" if listener.client_auth != "none" else ""
            host, port = self.endpoints[listener.name]
            log.info("broker %d listening on %s:%d (%s: %s%s)", self.node_id, host, port, listener.name,
                     listener.security_protocol, client_auth)

    @property
    def host(self) -> str:
        """The first listener's host ("" until started)."""
        return self.endpoints.get(self.listeners[0].name, ("", 0))[0]

    @property
    def port(self) -> int:
        """The first listener's port (0 until started)."""
        return self.endpoints.get(self.listeners[0].name, ("", 0))[1]

    @property
    def security_protocol(self) -> str:
        """Kafka's name for the first listener's protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL."""
        return self.listeners[0].security_protocol

    @property
    def client_auth(self) -> str:
        """Kafka's ssl.client.auth of the first listener: none, requested or required."""
        return self.listeners[0].client_auth

    async def stop(self) -> None:
        # Connections first: since Python 3.12 wait_closed() waits for every connection to end.
        self.runtime.state.unregister(self.node_id)
        for server in self.servers:
            server.close()
        for task in list(self.connections):
            task.cancel()
        if self.connections:
            await asyncio.gather(*self.connections, return_exceptions=True)
        servers, self.servers = self.servers, []
        try:
            await asyncio.wait_for(asyncio.gather(*(s.wait_closed() for s in servers)), 5.0)
        except asyncio.TimeoutError:
            log.warning("broker %d: connections still open at stop", self.node_id)

    def _pre_auth(self, listener: ListenerRuntime) -> bool:
        """Kafka's sasl.server.max.receive.size: what an unauthenticated peer may make the broker buffer."""
        return bool(listener.sasl) and self.runtime.sasl_max_receive_size < self.runtime.max_frame_size

    def _inbound(self, listener: ListenerRuntime) -> Inbound:
        """A new connection's protocol: its requests are received into its ServerConnection (inbound.py)."""
        # Produce's records stay views of the frame until the log copies the batch it keeps; the rest are
        # copies, so that nothing a handler keeps holds a receive buffer
        pre_auth = self._pre_auth(listener)
        conn = ServerConnection(max_frame_size=self.runtime.sasl_max_receive_size if pre_auth
                                else self.runtime.max_frame_size, zero_copy={PRODUCE})
        inbound = Inbound(conn, lambda reader, writer: self._serve(listener, inbound, writer, pre_auth))
        return inbound

    async def _serve(self, listener: ListenerRuntime, inbound: Inbound, writer: asyncio.StreamWriter,
                     pre_auth: bool) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.connections.add(task)
        peer = writer.get_extra_info("peername")
        ip = peer[0] if isinstance(peer, tuple) else ""
        session = Session(listener, host=f"/{ip}" if ip else "", address=java_host_address(ip),
                          port=peer[1] if isinstance(peer, tuple) else 0)
        if listener.sasl:
            session.sasl = sasl_server(listener.sasl_settings, self.runtime.state.credentials)
        conn = inbound.conn
        tls_unchecked = listener.tls is None  # the stream's first bytes are looked at once, as they arrive
        try:
            if _HANDSHAKE_IN_SERVE and listener.tls is not None:
                await self._tls_handshake(writer, listener.tls)
            inbound.writer = writer  # reading pauses from now on while requests wait (inbound.py)
            if not listener.sasl:  # Kafka: a verified client certificate names the principal, unless SASL does
                session.principal = self._tls_principal(writer, listener) or session.principal
            while True:
                turned = await inbound.wait(self.runtime.idle_timeout)
                if tls_unchecked and inbound.head:
                    tls_unchecked = False
                    if looks_like_tls(inbound.head):
                            raise Close(f"a TLS handshake on {listener.security_protocol} listener {listener.name} (SSL needs a "
                                    "TLS listener, e.g. --tls-cert, or --listen SSL://HOST:PORT)")
                if not conn.frames_waiting:
                    if inbound.error is not None:
                        raise inbound.error
                    break  # the end of the stream
                while conn.frames_waiting:
                    # Kafka mutes a connection while its request is served and round-robins connections:
                    # each request yields first, so a connection with many buffered (pipelined) requests
                    # takes one turn among all that have one ready, never the loop. A request the task was
                    # woken for has had its turn: no second one (an event loop pass a request saved)
                    if not turned:
                        await asyncio.sleep(0)
                    turned = False
                    await self._answer(conn, session)  # a long-polling fetch: later requests wait their turn
                    if pre_auth and session.sasl is not None and session.sasl.authenticated:
                        conn.max_frame_size, pre_auth = self.runtime.max_frame_size, False
                    out = conn.data_to_send()
                    if out:
                        # no joined copy: a Fetch response's batches are the log's own buffers
                        await write_buffers(writer, out)
                    if session.close_after_response:
                        # Kafka's connection.failed.authentication.delay.ms: the client reads the error
                        # before the close, and cannot retry in a tight loop
                        await asyncio.sleep(FAILED_AUTHENTICATION_DELAY)
                        raise Close("closing after a SASL error response")
        except kcodec.DecodeError as e:
            log.warning("broker %d: closing %s: bad frame: %s", self.node_id, peer, e)
        except Close as e:
            log.warning("broker %d: closing %s: %s", self.node_id, peer, e)
        except asyncio.TimeoutError:
            log.info("broker %d: closing idle connection %s", self.node_id, peer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except ssl.SSLError as e:  # a peer that fails the TLS handshake or breaks the TLS stream
            log.info("broker %d: closing %s: TLS: %s", self.node_id, peer, getattr(e, "reason", None) or e)
        except asyncio.CancelledError:
            pass
        except Exception:  # a bug of ours: log it, drop this connection, keep serving everyone else
            log.exception("broker %d: closing %s after an unexpected error", self.node_id, peer)
        finally:
            self.connections.discard(task)
            if self.runtime.client_telemetry:  # KIP-714: the instance made on this connection is forgotten
                with self.runtime.state.lock:
                    self.runtime.telemetry.disconnected(self.node_id, id(session))
            try:
                if session.close_after_response:
                    await asyncio.wait_for(writer.drain(), 1.0)
            except Exception:
                pass
            writer.close()

    async def _tls_handshake(self, writer: asyncio.StreamWriter, tls: ssl.SSLContext) -> None:
        """The server's side of the TLS handshake; Close, logged like any refused connection, when it fails."""
        if sys.version_info >= (3, 11):  # StreamWriter.start_tls (_HANDSHAKE_IN_SERVE)
            try:
                await writer.start_tls(tls, ssl_handshake_timeout=TLS_HANDSHAKE_TIMEOUT)
            except ssl.SSLError as e:
                raise Close(f"TLS handshake refused: {refused_handshake(e)}") from None
            except ConnectionAbortedError as e:  # asyncio's handshake timeout; silent if left to _serve
                raise Close(f"TLS handshake: {e}") from None

    def _tls_principal(self, writer: asyncio.StreamWriter, listener: ListenerRuntime) -> Optional[str]:
        try:
            return peer_principal(writer.get_extra_info("ssl_object"), listener.tls_principal_rules)
        except NoMatchingRule as e:  # Kafka fails the client's authentication
            raise Close(str(e)) from None
        except DerError as e:  # a certificate the handshake verified, yet not one we can read
            raise Close(f"its TLS certificate's subject: {e}") from None

    def _intercepted(self, key: int, version: int, req: Any) -> Optional[Any]:
        """A test's interceptor answer (faults.py), or NOT_CONTROLLER from a broker that is not the
        controller when the cluster plays a ZooKeeper-era one (``forward_admin=False``)."""
        runtime = self.runtime
        out = runtime.interceptors.answer(self.node_id, key, version, req) if runtime.interceptors else None
        if out is DROP:
            raise Close(f"a test interceptor drops this {_api_name(key)} request")
        if out is None and not runtime.forward_admin and key in CONTROLLER_APIS \
                and self.node_id != runtime.state.controller_id:
            out = error_response(key, version, req, ErrorCode.NOT_CONTROLLER)
        return out

    # -- one request -----------------------------------------------------------------------------------
    async def _answer(self, conn: ServerConnection, session: Session) -> None:
        """Decode the connection's next request and give it its answer (or none: a Produce with acks=0),
        awaiting it when the handler finishes later; or Close."""
        try:
            event = conn.next_event()
        except kcodec.DecodeError as e:
            raise Close(f"malformed request header: {e}") from None
        if isinstance(event, TokenReceived):  # SaslHandshake v0: bare tokens both ways until the exchange ends
            self._token(conn, event, session)
            return
        assert event is not None
        resp = self._handle(event, session)
        if isinstance(resp, handlers.Later):
            resp = await resp.result()
        if isinstance(resp, handlers.CloseConnection):
            raise Close(f"{_api_name(event.api_key)} v{event.version} {resp.reason}")
        if isinstance(event, RequestReceived) and not event.expects_response:  # acks=0: Kafka never answers
            return
        if resp is handlers.NO_RESPONSE:
            conn.skip(event)
            return
        version = 0 if isinstance(resp, _V0) else None  # ApiVersions of a version not served: the v0 layout
        try:
            conn.respond(event, resp.response if isinstance(resp, _V0) else resp, version)
        except kcodec.KcodecError:
            log.exception("broker %d: cannot encode the %s v%d response", self.node_id, _api_name(event.api_key),
                          event.version)
            raise Close("response encoding failed") from None
        conn.raw_tokens = session.sasl is not None and session.sasl.raw_tokens

    def _token(self, conn: ServerConnection, event: TokenReceived, session: Session) -> None:
        sasl = session.sasl
        assert sasl is not None
        with self.runtime.state.lock:  # the SCRAM credentials may change meanwhile (AlterUserScramCredentials)
            reply = sasl.token(event.data)
        if reply is None:
            raise Close(f"SASL {sasl.mechanism} authentication failed (handshake v0): {sasl.failure}")
        session.principal = sasl.principal or session.principal
        conn.respond_token(event, reply)
        conn.raw_tokens = sasl.raw_tokens

    def _handle(self, event: Union[RequestReceived, RequestFailed], session: Session) -> Any:
        """A request's answer: a response, handlers.Later / NO_RESPONSE / CloseConnection, or _V0; or Close."""
        header, key, version = event.header, event.api_key, event.version
        if not session.client:
            session.client = header.client_id or ""
        refusal = session.sasl.refusal(key) if session.sasl is not None else None
        if refusal is not None:  # Kafka: IllegalSaslStateException, or the end of an expired session
            raise Close(f"{_api_name(key)} {refusal}")
        handler = handlers.HANDLERS.get(key)
        if key == API_VERSIONS and handler is not None and (
                isinstance(event, RequestFailed) and isinstance(event.error, kcodec.UnsupportedVersionError)
                or not handler.versions[0] <= version <= handler.versions[1]):
            self.runtime.usage.record(session.client, "ApiVersions", version, header.client_id)
            return _V0(unsupported_version_response())
        if isinstance(event, RequestFailed):
            if isinstance(event.error, kcodec.UnsupportedVersionError):
                raise Close(f"api key {key} version {version}: {event.error}")
            raise Close(f"malformed {_api_name(key)} v{version} request: {event.error}")
        req = event.message
        intercepted = self._intercepted(key, version, req)
        if intercepted is not None:
            resp = intercepted
        elif handler is None or not (served := self.runtime.served(key, handler.versions))[0] <= version <= served[1]:
            resp = error_response(key, version, req, ErrorCode.UNSUPPORTED_VERSION)
            if resp is None:
                raise Close(f"{_api_name(key)} is not implemented and its response has no error code")
            log.info("broker %d: answered unsupported %s v%d", self.node_id, _api_name(key), version)
        else:
            ctx = Context(self.runtime, self.node_id, session, header, version)
            try:
                with self.runtime.state.lock:
                    self.runtime.txns.expire()  # transactions past their timeout are aborted first
                    self.runtime.state.logs.expire_producers()  # then idle producers' state goes
                    resp = handler.fn(ctx, req)
            except Exception:
                log.exception("broker %d: %s v%d failed", self.node_id, _api_name(key), version)
                resp = error_response(key, version, req, ErrorCode.UNKNOWN_SERVER_ERROR)
                if resp is None:
                    raise Close(f"{_api_name(key)} failed") from None
        # recorded after the handler: ApiVersions v3+ names the client software
        self.runtime.usage.record(session.client, _api_name(key), version, header.client_id)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("broker %d: %s v%d from %s (%s)", self.node_id, _api_name(key), version, session.client,
                      session.principal)
        return resp


class _V0:
    """An answer given at version 0 whatever the request's (ApiVersions of a version not served)."""

    def __init__(self, response: Any) -> None:
        self.response = response
