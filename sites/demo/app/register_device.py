"""demo.app.register_device: POST /app/device/register (JSON) -> a device id for the pool.

The one step of ``chains.demo.demo_device``, launched when the site's device pool
runs low; its items go into the device pool (``feeds``).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from base_task import CrawlTask, Parsed
from chains.engine import Envelope, Unit
from exceptions import ParseError
from external_interface.fetch import Request, Response
from external_interface.providers.refill import DeviceItem
from sites.demo import base_url
from worker import app


class RegisterInput(BaseModel):
    turn: int = Field(0, ge=0, description="Which refill this is (one device each).")


class Device(DeviceItem):
    collection = "devices"
    key_fields = ("device_id",)


def build_request(params: RegisterInput) -> Request:
    return Request(f"{base_url()}/app/device/register", method="POST", data=b"model=demo")


def parse(params: RegisterInput, response: Response) -> Parsed:
    device_id = response.json().get("device_id")
    if not isinstance(device_id, str) or not device_id:
        raise ParseError("registration answered without a device_id", url=response.url)
    return Parsed(items=[Device(device_id=device_id)])


@app.task(base=CrawlTask, bind=True, name="demo.app.register_device", Input=RegisterInput)
def register_device(self: CrawlTask, envelope: Envelope, units: list[Unit]) -> dict[str, int]:
    """A batch of device registrations."""
    return self.crawl(envelope, units, build_request, parse)
