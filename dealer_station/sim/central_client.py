"""A client of the central tier (the betting system's side of a studio): MQTT 3.1.1 (what the
central brokers speak), TLS checked against the studio's CA, a persistent session (clean session
off: QoS 1 messages wait for it while it is away), and failover: a lost or refused connection
moves it to the next central node, as a load balancer in front of the cluster would."""
import ssl

import paho.mqtt.client as mqtt

from dealer_station.mqtt_link import no_delay


def central_client(client_id, central, on_connect=None, on_message=None, on_subscribe=None):
    """central: {"nodes": [(host, port), ...], "ca": path, "username": .., "password": ..}.
    Connects in the background (loop_start); returns the client."""
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id,
                    protocol=mqtt.MQTTv311, clean_session=False)
    c.username_pw_set(central["username"], central["password"])
    c.tls_set(ca_certs=central["ca"], cert_reqs=ssl.CERT_REQUIRED)
    c.reconnect_delay_set(0.2, 1)
    nodes = list(central["nodes"])
    at = [central.get("first", 0) % len(nodes)]

    def next_node(*_):
        at[0] = (at[0] + 1) % len(nodes)
        # paho refuses the public setters unless the socket is closed: it is, here
        c._host, c._port = nodes[at[0]]
    c.on_disconnect = next_node
    c.on_connect_fail = next_node
    if on_connect:
        c.on_connect = on_connect
    if on_message:
        c.on_message = on_message
    if on_subscribe:
        c.on_subscribe = on_subscribe
    no_delay(c)
    c.connect_async(*nodes[at[0]], keepalive=10)
    c.loop_start()
    return c
