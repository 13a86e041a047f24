"""``manage.py console_proxy --kind novnc|serial``: a console proxy (Nova's nova-novncproxy and
nova-serialproxy), websockify's ``WebSocketProxy`` with cloudcore's token plugin
(``servers.console_proxy``). The VNC proxy also serves noVNC's web client (Debian's ``novnc``
package, ``settings.NOVNC_WEB_DIR``). ``run_cloud`` starts both; SIGTERM stops it.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from websockify.websocketproxy import WebSocketProxy

from servers.console_proxy import KINDS, ConsoleOriginPlugin, ConsoleRequestHandler, ConsoleTokenPlugin


class Command(BaseCommand):
    help = "Run a console proxy (websockify with cloudcore's console tokens)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--kind", choices=sorted(KINDS), required=True)
        parser.add_argument("--host", help="listen address (default: NOVNCPROXY_HOST / SERIALPROXY_HOST)")
        parser.add_argument("--port", type=int, help="listen port (default: NOVNCPROXY_PORT / SERIALPROXY_PORT)")

    def handle(self, *args: Any, **options: Any) -> None:
        kind = options["kind"]
        novnc = kind == "novnc"
        host = options["host"] or (settings.NOVNCPROXY_HOST if novnc else settings.SERIALPROXY_HOST)
        port = options["port"] or (settings.NOVNCPROXY_PORT if novnc else settings.SERIALPROXY_PORT)
        web = settings.NOVNC_WEB_DIR if novnc and Path(settings.NOVNC_WEB_DIR).is_dir() else ""
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
        self.stdout.write(f"{kind} console proxy on {host}:{port}" + (f", web client from {web}" if web else ""))
        try:
            server = WebSocketProxy(ConsoleRequestHandler, listen_host=host, listen_port=port, web=web, file_only=True,
                                    token_plugin=ConsoleTokenPlugin(kind), auth_plugin=ConsoleOriginPlugin(kind),
                                    verbose=options["verbosity"] > 1)
        except OSError as exc:
            raise CommandError(f"cannot start the {kind} console proxy: {exc}") from exc
        server.start_server()
